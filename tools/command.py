"""run_command: one bash command in the workspace, with bounded time and bounded output, under
the protection `workspace/sandbox/protection.py` decides (a bubblewrap sandbox where the platform allows,
with its limits on processes and memory: workspace/sandbox/limits.py).
It owns the rule that every process a command starts ends with it: on exit, timeout, cancel
and any signal that ends scribe (the sandbox's PID namespace, or the process group plus the
marker of leftovers.py without one)."""

from __future__ import annotations

import functools
import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any

from scribe.tools.base import (
    CommandInterrupted,
    OutputTail,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    stop_if_cancelled,
)
from scribe.tools.secrets import command_env
from scribe.tools.textio import human_bytes, plural
from scribe.workspace.git.folders import command_protection
from scribe.workspace.git.planted import MAX_FOLDERS, GitConfigWatch
from scribe.workspace.sandbox import leftovers
from scribe.workspace.sandbox.limits import CommandCgroup
from scribe.workspace.sandbox.protection import Protection, hide_own_process

MAX_TIMEOUT_S = 1800.0
# After SIGTERM, how long the group gets before SIGKILL.
TERM_GRACE_S = 1.0
# After SIGKILL, how long to keep draining: a process that escaped everything we can reach
# may still hold the pipe, and must not hang the tool.
DRAIN_GRACE_S = 0.5
# After bash itself exits, how long background jobs still writing to our pipe may finish
# before they are ended (without a sandbox; in one they end with the command at once).
ORPHAN_GRACE_S = 0.5
_READ_CHUNK = 65536
_POLL_S = 0.05
ENDED = "the command and the processes it started were ended"


class _CappedOutput:
    """Keeps the first and last halves of `cap` bytes and counts what falls in between."""

    def __init__(self, cap: int) -> None:
        self.head_cap = max(cap, 0) // 2
        self.tail_cap = max(cap, 0) - self.head_cap
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail.append(chunk)
        self.tail_len += len(chunk)
        # Drop whole chunks only while the rest still covers the tail, so memory stays ~cap.
        while self.tail and self.tail_len - len(self.tail[0]) >= self.tail_cap:
            self.tail_len -= len(self.tail.popleft())

    def render(self) -> tuple[str, int]:
        tail = b"".join(self.tail)[-self.tail_cap :] if self.tail_cap else b""
        dropped = self.total - len(self.head) - len(tail)
        head_text = self.head.decode("utf-8", errors="replace")
        tail_text = tail.decode("utf-8", errors="replace")
        if dropped <= 0:
            return head_text + tail_text, 0
        sep = "" if head_text.endswith("\n") or not head_text else "\n"
        return f"{head_text}{sep}[… {human_bytes(dropped)} of output dropped …]\n{tail_text}", dropped


class _Running:
    """One command in flight: its process (bash, or bubblewrap around it) and how to reach
    everything it started."""

    def __init__(self, proc: subprocess.Popen[bytes], protection: Protection, command_id: str,
                 status_fd: int, cgroup: CommandCgroup | None = None) -> None:
        self.proc = proc
        self.protection = protection
        self.command_id = command_id
        self.status_fd = status_fd  # the sandbox's report of leftovers; -1 without one
        self.cgroup = cgroup  # the pids cgroup that bounds its processes, where that is how
        self.cancelled = threading.Event()

    def signal(self, sig: signal.Signals) -> None:
        """Signal the command's process group and, without a sandbox, every process that
        carries its marker (a `setsid` job has left the group). In the sandbox, the end of
        bubblewrap ends the whole PID namespace."""
        _signal_group(self.proc.pid, sig)
        if not self.protection.sandboxed:
            leftovers.signal_marked(self.command_id, sig)

    def end_leftovers(self) -> int:
        """End what the command left running once bash has exited; returns how many."""
        if self.protection.sandboxed:
            return self._reported_leftovers()
        count = leftovers.end_marked(self.command_id)
        _signal_group(self.proc.pid, signal.SIGKILL)  # any that dropped the marker but not the group
        return count

    def _reported_leftovers(self) -> int:
        try:
            report = os.read(self.status_fd, 64)
        except BlockingIOError:
            return 0
        text = report.decode("ascii", errors="replace").strip()
        return int(text) if text.isdigit() else 0

    def close(self) -> None:
        if self.status_fd >= 0:
            os.close(self.status_fd)
            self.status_fd = -1


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


class RunCommand:
    name = "run_command"
    kind: ToolKind = "command"
    description = (
        "Run a bash command in the workspace root; returns stdout and stderr combined. No stdin and no "
        "terminal, so use non-interactive flags. It is ended after timeout_s seconds (default from config, "
        "max 1800). Every process it starts, background jobs included, ends when it does. Where a sandbox "
        "is in force only the workspace and a private /tmp are writable. Very long output is cut in the "
        "middle."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The bash command line to run."},
            "timeout_s": {"type": "number", "description": "Seconds before the command is killed."},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    def __init__(self) -> None:
        # Runs in progress, keyed by id. A plain dict, not a lock: cancel() may be called from a
        # signal handler that interrupted run() on the same thread.
        self._running: dict[int, _Running] = {}

    def summary(self, args: dict[str, Any]) -> str:
        command = str(args.get("command", "")).strip()
        first = command.splitlines()[0] if command else ""
        if len(first) > 120:
            return first[:119] + "…"
        return first + " …" if "\n" in command else first

    def cancel(self) -> bool:
        """End the running command and what it started (safe from another thread or a signal
        handler). Returns whether anything was running."""
        runs = list(self._running.values())
        for run in runs:
            run.cancelled.set()
            run.signal(signal.SIGTERM)
        return bool(runs)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        command: str = args["command"]
        if not command.strip():
            raise ToolError("command is empty")
        timeout = float(args.get("timeout_s", ctx.command_timeout_s))
        if timeout <= 0:
            raise ToolError("timeout_s must be a positive number of seconds")
        timeout = min(timeout, MAX_TIMEOUT_S)
        protection = ctx.protection or _default_protection(ctx.workspace.resolve(), tuple(ctx.allowed_roots))
        watch = git_watch(ctx, protection)
        watch.settle()  # what changed since the last command or hook is not this one's doing
        with protection.limits.cgroup_for_command() as cgroup:
            out = self._run(command, ctx, timeout, _start(command, ctx, protection, cgroup))
        return _with_planted(out, watch)

    def _run(self, command: str, ctx: ToolContext, timeout: float, run: _Running) -> ToolOutput:
        self._running[id(run)] = run
        output = _CappedOutput(ctx.output_cap_bytes)
        try:
            try:
                reason, left = _pump(run, output, timeout, ctx.cancelled, ctx.output_tail)
            except KeyboardInterrupt as stop:  # Ctrl-C, or a signal that ends scribe (str says which)
                run.signal(signal.SIGKILL)  # leave nothing behind, keep what it printed
                partial = _result(run, "cancelled", timeout, output, 0, why=str(stop))
                raise CommandInterrupted(partial, stop) from None
            except BaseException:
                run.signal(signal.SIGKILL)
                raise
            finally:
                self._running.pop(id(run), None)
                assert run.proc.stdout is not None
                run.proc.stdout.close()
            return _result(run, reason, timeout, output, left)
        finally:
            run.close()


def _start(command: str, ctx: ToolContext, protection: Protection, cgroup: CommandCgroup | None) -> _Running:
    command_id = leftovers.new_command_id()
    env = {**command_env(), leftovers.MARKER: command_id}
    if not protection.sandboxed:
        hide_own_process()
        if leftovers.can_find():
            leftovers.ensure_reaper(env)
    status_r, status_w = os.pipe() if protection.sandboxed else (-1, -1)
    try:
        proc = subprocess.Popen(
            protection.argv(command, status_w, cgroup.prefix() if cgroup is not None else ()),
            cwd=ctx.workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so one killpg reaches every child
            env=env,
            pass_fds=(status_w,) if status_w >= 0 else (),
        )
    except BaseException:
        if status_r >= 0:
            os.close(status_r)
        raise
    finally:
        if status_w >= 0:
            os.close(status_w)
    if status_r >= 0:
        os.set_blocking(status_r, False)
    return _Running(proc, protection, command_id, status_r, cgroup)


def git_watch(ctx: ToolContext, protection: Protection) -> GitConfigWatch:
    """The session's watch of the workspace's git configuration (made on first use: it walks the
    workspace once), shared by its commands and its workspace hooks."""
    if ctx.git_watch is None:
        ctx.git_watch = GitConfigWatch(ctx.workspace.resolve(), skip=ctx.scribe_folders, box=protection)
    return ctx.git_watch


def _with_planted(out: ToolOutput, watch: GitConfigWatch) -> ToolOutput:
    """The result, with a line for each git folder the command created or whose configuration
    it changed (the sandbox keeps scribe's git from running them; the person's own git would)."""
    try:
        planted = watch.changes()
    except OSError as exc:
        return replace(out, text=f"{out.text}\n[could not check the workspace's git configuration: {exc}]")
    incomplete = ("\n[git configuration checked in the first "
                  f"{MAX_FOLDERS:,} folders only]" if watch.incomplete else "")
    if not planted:
        return replace(out, text=out.text + incomplete) if incomplete else out
    lines = "".join(f"\n[{p.line()}]" for p in planted)
    return replace(out, text=f"{out.text}{lines}{incomplete}", git_config=[p.record() for p in planted])


@functools.cache
def _default_protection(workspace: Path, allowed_roots: tuple[Path, ...]) -> Protection:
    """For a context built without one (tests, tools used on their own): the same detection."""
    return command_protection(workspace, allowed_roots=allowed_roots)


def _pump(run: _Running, output: _CappedOutput, timeout: float,
          cancelled: threading.Event | None = None, tail: OutputTail | None = None) -> tuple[str | None, int]:
    """Read output until the pipe closes and bash has exited, enforcing timeout and cancel
    (`cancelled`: the session's; it stops the command as Ctrl-C does), each piece passed on to
    `tail` too as it comes.
    Returns why the command was ended early ("timeout", "cancelled"), or None, and how many
    processes it left running that were ended."""
    proc = run.proc
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    reason: str | None = None
    left = 0
    killed_at = 0.0
    hard_killed = False
    exited_at: float | None = None
    orphans_ended = False
    eof = False
    try:
        while not (eof and exited_at is not None):
            stop_if_cancelled(cancelled)
            now = time.monotonic()
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if reason is None:
                if run.cancelled.is_set():
                    reason = "cancelled"
                elif now >= deadline:
                    reason = "timeout"
                if reason is not None:
                    killed_at = now
                    run.signal(signal.SIGTERM)
                elif (exited_at is not None and not eof and not orphans_ended
                      and now - exited_at >= ORPHAN_GRACE_S):
                    # bash is gone but something it started still holds the output
                    orphans_ended = True
                    left = run.end_leftovers()
                    killed_at, hard_killed = now, True
            elif not hard_killed and now - killed_at >= TERM_GRACE_S:
                hard_killed = True
                run.signal(signal.SIGKILL)
            if hard_killed and now - killed_at >= TERM_GRACE_S + DRAIN_GRACE_S:
                break  # whatever still holds the pipe escaped us; stop waiting for it
            if eof:
                # bash closed its output but has not been seen to exit: wait for its exit, which
                # is usually a moment away (a fixed sleep here cost every command 50 ms)
                try:
                    proc.wait(timeout=_POLL_S)
                except subprocess.TimeoutExpired:
                    pass
                continue
            for _key, _events in selector.select(timeout=_POLL_S):
                try:
                    chunk = os.read(fd, _READ_CHUNK)
                except BlockingIOError:
                    continue
                if chunk:
                    output.add(chunk)
                    if tail is not None:
                        tail.add(chunk)
                else:
                    eof = True
                    selector.unregister(fd)
    finally:
        selector.close()
    if reason is None and not orphans_ended:
        left = run.end_leftovers()
    return reason, left


def _result(run: _Running, reason: str | None, timeout: float, output: _CappedOutput, left: int,
            why: str = "") -> ToolOutput:
    proc = run.proc
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        run.signal(signal.SIGKILL)
        proc.wait()
    code = proc.returncode
    signal_name = ""
    if code < 0:  # killed by a signal: report it the way a shell would
        code = 128 - code
    if code > 128:  # a shell's (and the sandbox's) way of saying "killed by signal N"
        try:
            signal_name = signal.Signals(code - 128).name
        except ValueError:
            pass
    text, dropped = output.render()
    notes: list[str] = []
    swept = run.protection.sweep()
    if swept:
        notes.append(f"[removed what the command created where git reads its configuration: {', '.join(swept)}]")
    limit = run.protection.limits.reached(left, run.cgroup.refused_forks() if run.cgroup is not None else 0)
    if limit:
        notes.append(f"[{limit}; {ENDED}]")
    if reason == "timeout":
        notes.append(f"[timed out after {timeout:g}s; {ENDED}]")
    elif reason == "cancelled":
        notes.append(f"[cancelled ({why}); {ENDED}]" if why else f"[cancelled; {ENDED}]")
    else:
        if left:
            notes.append(f"[ended with the command: {plural(left, 'background process', 'background processes')}"
                         " still running (everything a command starts ends when it does)]")
        if code != 0:
            notes.append(f"[exit code {code} ({signal_name})]" if signal_name else f"[exit code {code}]")
    if notes:
        text = text + ("\n" if text and not text.endswith("\n") else "") + "\n".join(notes)
    elif not text:
        text = "(no output)"
    is_error = reason in ("timeout", "cancelled") or code != 0
    return ToolOutput(text=text, is_error=is_error, exit_code=code, dropped_bytes=dropped)
