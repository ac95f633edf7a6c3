"""`scribe run`: one headless turn, scriptable, never prompts."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from scribe.agent import driver
from scribe.agent.protocol import (
    AgentEvent,
    AssistantMessage,
    CommitFailed,
    Curated,
    LifeEvent,
    SessionOpened,
    TurnEnded,
)
from scribe.context.stats import Figures, Pricer
from scribe.log.events import UserEvent
from scribe.settings.values import PERMISSION_MODES

from .app import ALLOWED_HELP, DISALLOWED_HELP
from .exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_MAX_TURNS, EXIT_OK, cli_errors, fail, warn
from .headless import StreamJsonSink, TextSink
from .rule_flags import rules_of
from .signals import Stopped, ending_signals
from .trust import tell_ignored
from .visible import visible

if TYPE_CHECKING:
    from scribe.agent.session.session import Session


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


# In a headless run Ctrl-C ends scribe as SIGTERM and SIGHUP do, and says so the same way.
RUN_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_FOR = {"end_turn": EXIT_OK, "max_tokens": EXIT_OK, "refusal": EXIT_FAILED, "error": EXIT_FAILED,
            "max_turns": EXIT_MAX_TURNS, "interrupted": EXIT_INTERRUPTED}


def run(
    prompt: Annotated[str, typer.Argument(help="What to do. '-' reads the prompt from stdin.")],
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest session of this workspace.")] = False,
    session: Annotated[str | None, typer.Option("--session", "-s", help="Continue this session (id or any unique part of it).")] = None,
    permission_mode: Annotated[str | None, typer.Option(
        "--permission-mode", "-p",
        help=f"What runs without asking: {', '.join(m for m in PERMISSION_MODES if m != 'ask')}. "
             "Headless never prompts: a refused call goes back to the model as an error. [default: accept-edits]")] = None,
    output: Annotated[OutputFormat, typer.Option("--output", "-o", help="text streams the answer; json prints one summary object; stream-json one object per event.")] = OutputFormat.text,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1, help="Most model calls in this run. [default: 50]")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model to use; a continued session switches to it. [default: claude-sonnet-5-5]")] = None,
    auto_commit: Annotated[bool | None, typer.Option(
        "--auto-commit/--no-auto-commit",
        help="Commit the files the agent wrote at the end of the turn (`scribe undo` takes it back). [default: off]")] = None,
    image: Annotated[list[Path] | None, typer.Option(
        "--image", help="Attach this image (PNG, JPEG, GIF, WebP) to the prompt; repeatable. "
                        "A large one is sized down to what the API takes.")] = None,
    trust_workspace: Annotated[bool, typer.Option(
        "--trust-workspace", help="Apply this workspace's own .scribe/config.toml and .mcp.json for this run "
                                  "(untrusted, they are ignored; `scribe trust` remembers the trust).")] = False,
    allowed_tools: Annotated[list[str] | None, typer.Option(
        "--allowed-tools", "--allowedTools", metavar="RULES", help=ALLOWED_HELP)] = None,
    disallowed_tools: Annotated[list[str] | None, typer.Option(
        "--disallowed-tools", "--disallowedTools", metavar="RULES", help=DISALLOWED_HELP)] = None,
) -> None:
    """Run one turn headless: the agent works until it answers, then exits.

    Exit codes: 0 done, 1 the model call failed (or the --auto-commit did), 2 bad usage or configuration,
    3 stopped at --max-turns, 4 the session log could not be written (disk full,
    read-only), 130 interrupted (Ctrl-C), 143 SIGTERM, 129 SIGHUP.
    """
    # Imported here, not at the top: what the agent needs is not what `--help` needs.
    from scribe.agent.actions.attach import image_files
    from scribe.agent.assembly import Opening, SessionChoice, open_agent
    from scribe.model.client import preload_sdk

    said = RunLines(quiet=output is OutputFormat.json)
    with cli_errors(), ending_signals(RUN_SIGNALS, closing=said.stopped) as ending:
        text = sys.stdin.read() if prompt == "-" else prompt
        said.prompt = text
        if not text.strip():
            raise fail("the prompt is empty")
        if continue_ and session:
            raise fail("give --continue or --session, not both")
        if permission_mode == "ask":
            raise fail("permission mode 'ask' needs a person; headless runs use read-only, accept-edits or full-auto")
        images = image_files(image) if image else []
        # The SDK's import is most of a cold start: it runs in a thread while the session is
        # prepared (config, git, the sandbox's probe), which spends much of its time waiting.
        preload_sdk()
        opening = Opening(Path.cwd(), SessionChoice(continue_, session, model), trust_workspace=trust_workspace,
                          flags={"permission_mode": permission_mode, "max_turns": max_turns, "model": model,
                                 "auto_commit": auto_commit},
                          rules=rules_of(allowed_tools, disallowed_tools))
        with open_agent(opening, show=said, on_trust=tell_ignored, tell=warn) as opened:
            agent_session = opened.session
            ended, totals, failed_commits = _follow(opened.agent.turn(text, images), output, opened.prices.price_usage,
                                                    agent_session.id)
        if output is OutputFormat.json:
            print(json.dumps({
                "session_id": agent_session.id, "log": str(agent_session.path),
                "result": ended.text, "stop_reason": ended.reason, "error": ended.error,
                "calls": ended.calls, "usage": totals.as_dict(), "notes": said.notes,
                "memory": agent_session.digest.health.as_dict(),
            }, ensure_ascii=False))
        elif ended.error:
            print(f"scribe: {visible(ended.error)}", file=sys.stderr)
        elif ended.reason == "max_turns":
            print(f"scribe: stopped after {ended.calls} model calls (--max-turns); "
                  f"continue with: scribe run -c '...'", file=sys.stderr)
        ending.raise_if_received()  # a signal ended the turn: scribe ends now, saying so
        if output is not OutputFormat.text:  # the text output showed them as they came
            for failure in failed_commits:
                print(f"scribe: {visible(failure.text)}", file=sys.stderr)
        code = EXIT_FOR.get(ended.reason, EXIT_FAILED)
        # The commit the person asked for did not happen: the run did not do all it was asked.
        raise typer.Exit(EXIT_FAILED if failed_commits and code == EXIT_OK else code)


@dataclass
class RunLines:
    """What a run says on stderr as its session starts: the curations of earlier sessions worth a
    line (also kept for the JSON summary, which says them instead: `quiet`), and what is worth a
    note about the session it runs in."""

    quiet: bool
    notes: list[str] = field(default_factory=list)
    prompt: str | None = None  # once read
    session: Session | None = None  # once opened
    opened_at: int = 0  # its events then: the prompt comes after

    def stopped(self, stop: Stopped) -> str:
        """The closing line of a run a signal ended: only what happened is said."""
        session = self.session
        recorded = session is not None and any(
            isinstance(e, UserEvent) and e.text == self.prompt for e in session.events[self.opened_at:])
        if session is None or not recorded:
            return f"scribe: {stop} before the prompt was recorded; nothing was sent: run it again"
        return (f"scribe: {stop}; what it was running was ended and recorded in session {session.id}; "
                "`scribe run -c` continues it")

    def __call__(self, event: LifeEvent) -> None:
        if isinstance(event, Curated) and event.noteworthy:
            self.notes.append(event.text)
            if not self.quiet:
                print(f"scribe: {visible(event.text)}", file=sys.stderr)
        elif isinstance(event, SessionOpened):
            self.session, self.opened_at = event.session, len(event.session.events)
            for problem in event.problems:
                print(f"scribe: note: {event.session.path.name} {visible(problem)}", file=sys.stderr)
            for notice in event.notices:
                print(f"scribe: note: {visible(notice)}", file=sys.stderr)
            for line in event.mcp:
                print(f"scribe: {visible(line)}", file=sys.stderr)


def _follow(turn: Generator[AgentEvent, None, TurnEnded], output: OutputFormat,
            price: Pricer, session_id: str) -> tuple[TurnEnded, Figures, list[CommitFailed]]:
    """The turn through the driver, shown in the output asked for, and counted."""
    totals = Figures()
    show: Callable[[AgentEvent], None] | None = None
    if output is OutputFormat.text:
        show = TextSink()
    elif output is OutputFormat.stream_json:  # its last event says what --output json would
        show = StreamJsonSink(summary=lambda: {"session_id": session_id, "usage": totals.as_dict()})
    failed_commits: list[CommitFailed] = []

    def shown(event: AgentEvent) -> None:
        if isinstance(event, AssistantMessage):
            totals.add(event.usage.tokens, *price(event.usage))
        if isinstance(event, CommitFailed):
            failed_commits.append(event)
        if show is not None:
            show(event)

    return driver.drive(turn, shown), totals, failed_commits
