"""Running the configured hooks (settings/hooks.py) at their points of a turn, and what each
outcome does. Every run is a `hook` event in the log: what ran, whose it was, its exit code,
how long it took, what it said on stderr and what of it the model is shown.

    user_prompt_submit  before the message is sent: exit 2 blocks it (stderr tells the person);
                        exit 0 with output adds that output for the model, after the message
    pre_tool_use        before a tool call (and before the permission question): exit 2 blocks
                        it, and its stderr becomes the call's error result
    post_tool_use       after a tool call ran: exit 2 shows its stderr to the model
    stop                when the model ends its answer: exit 2 shows its stderr to the model,
                        which goes on (at most STOP_BLOCKS times a turn)
    session_start       a session opened (new, resumed, or after /clear): exit 0 with output
                        adds that output for the model
    session_end         the session ends (scribe exits, /clear, /resume)
    pre_compact         memory is about to be compressed (asked for, or as a call needs it)
    subagent_stop       a sub-agent ended (matcher: its kind): exit 2 shows its stderr to the
                        model, beside the sub-agent's result
    notification        scribe waits for the person: an approval is asked

Any other exit code, a timeout or a hook that cannot start is a failure the person is told of
in one line, and the turn goes on as if the hook had said nothing (as Claude Code does: a hook
that fails does not block). A workspace's hook runs as a command does, and like a command's,
the git configuration it creates or changes is reported: one line for the person and a
`git_config` event naming the hook (workspace/git/planted.py). What the model is shown is the event's `feedback`, rendered from the
log (context/render.py), so `scribe log prompt --at` rebuilds it and the cached prefix before it
never moves.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.agent.hooks.process import HookProcess, hook_env, run_hook_process
from scribe.agent.session.session import Session
from scribe.log.events import GitConfigEvent, HookEvent
from scribe.settings.hooks import HookName, Hooks, HookSpec
from scribe.tools.secrets import Redactor
from scribe.workspace.git.planted import GitConfigWatch, describe
from scribe.workspace.sandbox.protection import Protection

BLOCK = 2  # the exit code that blocks, as in Claude Code
# The stderr a hook event keeps, and the most of a hook's output the model is shown.
STDERR_CHARS = 4000
FEEDBACK_CHARS = 10_000
# How many times the stop hooks may send the model back to work in one turn.
STOP_BLOCKS = 3
NO_SANDBOX = "not run: a workspace's hooks run only in the sandbox, and commands here run without one"


@dataclass(frozen=True)
class HookVerdict:
    """What the hooks of one point said: `blocked` with the reason (its stderr), one line each
    for the person about hooks that failed or planted git configuration, and the `hook` and
    `git_config` events to log (`HookRunner.log`)."""

    blocked: bool = False
    reason: str = ""
    notices: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    planted: list[dict[str, Any]] = field(default_factory=list)


class HookRunner:
    def __init__(self, hooks: Hooks, workspace: Path, protection: Callable[[], Protection], redact: Redactor,
                 *, permission_mode: Callable[[], str] = lambda: "",
                 git_watch: Callable[[], GitConfigWatch] | None = None,
                 cancelled: threading.Event | None = None) -> None:
        self.hooks = hooks
        self.workspace = workspace
        self.protection = protection  # the session's, found when a workspace hook first runs
        self.redact = redact
        self.permission_mode = permission_mode
        self.git_watch = git_watch  # the session's, shared with its commands
        self.cancelled = cancelled  # the session's: a cancel ends a hook as it ends a command

    def wanted(self, event: HookName, tool: str | None = None) -> bool:
        return bool(self.hooks.for_event(event, tool))

    def run(self, session: Session, event: HookName, payload: dict[str, Any], *, tool: str | None = None,
            tool_use_id: str | None = None) -> HookVerdict:
        """Run the hooks of `event` in their order; the first to block ends the run (the later
        ones do not start). Nothing is logged yet: `log` appends what this returns, so the
        caller decides where in the log it stands (a prompt hook's after the message)."""
        specs = self.hooks.for_event(event, tool)
        if not specs:
            return HookVerdict()
        data = json.dumps({"hook_event_name": event, "session_id": session.id, "transcript_path": str(session.path),
                           "cwd": str(self.workspace), "permission_mode": self.permission_mode(), **payload},
                          ensure_ascii=False).encode("utf-8")
        notices: list[str] = []
        records: list[dict[str, Any]] = []
        planted: list[dict[str, Any]] = []
        for spec in specs:
            watch = self._watch_for(spec)
            if watch is not None:
                watch.settle()  # what changed before this hook is not its doing
            ran = self._start(spec, data)
            if watch is not None and ran is not None:
                self._planted(watch, spec, tool_use_id, notices, planted)
            stderr = self.redact(ran.stderr.strip()) if ran is not None else ""
            outcome, line = _outcome(spec, ran, stderr)
            records.append(dict(
                hook=event, command=spec.command, owner=spec.owner, outcome=outcome,
                exit_code=ran.exit_code if ran is not None else None,
                duration_ms=ran.duration_ms if ran is not None else 0,
                stderr=_cut(stderr, STDERR_CHARS), feedback=self._feedback(event, outcome, ran, stderr),
                **({"tool": tool, "tool_use_id": tool_use_id} if tool is not None else {})))
            if line:
                notices.append(line)
            if outcome == "blocked":
                return HookVerdict(True, stderr, notices, records, planted)
        return HookVerdict(False, "", notices, records, planted)

    @staticmethod
    def log(session: Session, verdict: HookVerdict) -> list[HookEvent]:
        events = [session.append(HookEvent, **record) for record in verdict.records]
        for record in verdict.planted:
            session.append(GitConfigEvent, **record)
        return events

    def _watch_for(self, spec: HookSpec) -> GitConfigWatch | None:
        """The session's git configuration watch, for a workspace hook that will run (sandboxed)."""
        if spec.owner != "workspace" or self.git_watch is None or not self.protection().sandboxed:
            return None
        return self.git_watch()

    @staticmethod
    def _planted(watch: GitConfigWatch, spec: HookSpec, tool_use_id: str | None, notices: list[str],
                 planted: list[dict[str, Any]]) -> None:
        """What the hook that just ran planted: a line for the person, and a `git_config` record."""
        hook = f"{spec.event} `{_cut(spec.command, 60)}`"
        try:
            changes = [p.record() for p in watch.changes()]
        except OSError as exc:
            notices.append(f"hook {hook}: could not check the workspace's git configuration: {exc}")
            return
        if changes:
            notices.append(describe(changes, hook))
            planted.append(dict(changes=changes, hook=hook, **({"tool_use_id": tool_use_id} if tool_use_id else {})))

    def _start(self, spec: HookSpec, data: bytes) -> HookProcess | None:
        """The hook run, or None when it may not run (a workspace's hook without a sandbox)."""
        protection = None
        if spec.owner == "workspace":
            protection = self.protection()
            if not protection.sandboxed:
                return None
        env = hook_env(spec.pass_env if spec.owner == "person" else (), self.workspace, spec.event)
        try:
            return run_hook_process(spec.command, data, workspace=self.workspace, env=env, timeout_s=spec.timeout_s,
                                    protection=protection, cancelled=self.cancelled)
        except OSError as exc:
            return HookProcess(None, "", f"could not start: {exc.strerror or exc}", 0)

    def _feedback(self, event: HookName, outcome: str, ran: HookProcess | None, stderr: str) -> str:
        """What the model is shown of this run: a prompt or session_start hook's output as added
        context, the stderr of a post_tool_use, stop or subagent_stop hook that exited 2; nothing
        otherwise."""
        if ran is None:
            return ""
        if event in ("user_prompt_submit", "session_start") and outcome == "ok":
            return _cut(self.redact(ran.stdout.strip()), FEEDBACK_CHARS)
        if event in ("post_tool_use", "stop", "subagent_stop") and outcome == "blocked":
            return _cut(stderr or "(the hook gave no reason)", FEEDBACK_CHARS)
        return ""


def _outcome(spec: HookSpec, ran: HookProcess | None, stderr: str) -> tuple[str, str]:
    """(outcome, the line for the person or ""): ok, blocked, failed, timeout or skipped."""
    name = f"hook {spec.event} `{_cut(spec.command, 60)}`"
    if ran is None:
        return "skipped", f"{name}: {NO_SANDBOX}"
    if ran.timed_out:
        return "timeout", f"{name} did not finish within {spec.timeout_s:g} s (timeout_s) and was ended; ignored"
    if ran.exit_code == 0:
        return "ok", ""
    if ran.exit_code == BLOCK:
        return "blocked", ""
    said = stderr.splitlines()[0] if stderr else "no message"
    return "failed", f"{name} failed (exit {ran.exit_code}: {_cut(said, 200)}); ignored"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[… {len(text) - limit} more characters …]"


def blocked_result(reason: str) -> str:
    """The error result a pre_tool_use hook's block gives the call: its stderr, said as such."""
    return f"blocked by a pre_tool_use hook: {reason or '(the hook gave no reason)'}"
