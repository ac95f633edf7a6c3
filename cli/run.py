"""`scribe run`: headless, scriptable, never prompts on a terminal. One turn from a prompt, or with
`--input-format stream-json` a session of many turns over stdin (cli/stream_input.py), its
approvals answered there too. A thin front end on the agent core (agent/core.py)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeGuard

import typer

from scribe.agent import driver
from scribe.agent.protocol import (
    CommitFailed,
    Compressed,
    Curated,
    Event,
    Notice,
    SessionOpened,
    TurnEnded,
    UserMessage,
)
from scribe.log.events import UsageEvent, UserEvent
from scribe.settings.values import PERMISSION_MODES, PermissionMode

from .app import ALLOWED_HELP, DISALLOWED_HELP
from .compressed import compressed_line
from .exits import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_MAX_TURNS, EXIT_OK, cli_errors, fail, warn
from .headless import StreamJson, TextSink, TurnFigures
from .rule_flags import rules_of
from .signals import Stopped, ending_signals
from .visible import visible

if TYPE_CHECKING:
    from scribe.agent.core import Agent
    from scribe.agent.session.session import Session


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class InputFormat(StrEnum):
    text = "text"
    stream_json = "stream-json"


# In a headless run Ctrl-C ends scribe as SIGTERM and SIGHUP do, and says so the same way.
RUN_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_FOR = {"end_turn": EXIT_OK, "max_tokens": EXIT_OK, "refusal": EXIT_FAILED, "error": EXIT_FAILED,
            "max_turns": EXIT_MAX_TURNS, "interrupted": EXIT_INTERRUPTED}
HEADLESS_MODES = [m for m in PERMISSION_MODES if m != PermissionMode.ASK]


def run(
    prompt: Annotated[str | None, typer.Argument(
        help="What to do. '-' reads the prompt from stdin. None with --input-format stream-json.")] = None,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest session of this workspace.")] = False,
    session: Annotated[str | None, typer.Option("--session", "-s", "--resume", help="Continue this session (id or any unique part of it).")] = None,
    permission_mode: Annotated[str | None, typer.Option(
        "--permission-mode", "-p",
        help=f"What runs without asking: {', '.join(HEADLESS_MODES)}; with --input-format stream-json also ask "
             "(the approvals are answered on stdin). Otherwise nothing prompts: a refused call goes back to the "
             "model as an error. [default: accept-edits]")] = None,
    output: Annotated[OutputFormat, typer.Option(
        "--output", "-o", "--output-format",
        help="text streams the answer; json prints one summary object; stream-json one object per event, in "
             "Claude Code's shapes.")] = OutputFormat.text,
    input_format: Annotated[InputFormat, typer.Option(
        "--input-format",
        help="stream-json: no prompt argument; a session of many turns read from stdin, one JSON object a line "
             "(messages, interrupts, approvals' answers), with -o stream-json.")] = InputFormat.text,
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1, help="Most model calls in a turn. [default: 50]")] = None,
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
    from scribe.agent.config import AgentConfig, Overrides, SessionChoice
    from scribe.agent.core import Agent
    from scribe.agent.finishing.finisher import hand_over

    from .preload import preload_sdk

    conversing = input_format is InputFormat.stream_json
    said = RunLines(quiet=output is OutputFormat.json)
    with cli_errors(), ending_signals(RUN_SIGNALS, closing=said.stopped) as ending:
        if conversing and output is not OutputFormat.stream_json:
            raise fail("--input-format stream-json needs --output stream-json (-o stream-json)")
        if conversing and (prompt is not None or image):
            raise fail("--input-format stream-json reads its messages from stdin: give no prompt or --image")
        if not conversing:
            if prompt is None:
                raise fail("give a prompt (or '-' to read it from stdin, or --input-format stream-json)")
            text = sys.stdin.read() if prompt == "-" else prompt
            said.prompt = text
            if not text.strip():
                raise fail("the prompt is empty")
        if continue_ and session:
            raise fail("give --continue or --session, not both")
        mode = _mode(permission_mode, conversing)
        images = image_files(image) if image else []
        rules = rules_of(allowed_tools, disallowed_tools)
        # The run's output first: it is what the run is for, whatever the agent then does.
        shown = Conversation(said) if conversing else OneTurn(UserMessage(text, tuple(images)), output, said)
        # The SDK's import is most of a cold start: it runs in a thread while the session is
        # prepared (config, git, the sandbox's probe), which spends much of its time waiting.
        preload_sdk()
        config = AgentConfig(Path.cwd(), SessionChoice(continue_, session, model),
                             Overrides(permission_mode=mode, model=model, max_turns=max_turns, auto_commit=auto_commit),
                             trust_workspace=trust_workspace, answers=conversing, rules=rules, finish_after=True)
        agent = Agent(config)
        said.agent = agent
        try:
            code = shown.drive(agent)
        finally:
            ended = agent.close()
            for line in ended.lines:
                warn(line)
        # After the answer: what the session left is handed on to a finisher (or, with
        # housekeeping = "inline", done now, saying so with the seconds it took).
        for done in hand_over(ended.left):
            said.housekeeping(done)
        ending.raise_if_received()  # a signal ended the turn: scribe ends now, saying so
        raise typer.Exit(code)


def _mode(given: str | None, conversing: bool) -> PermissionMode | None:
    if given is None:
        return None
    if given not in PERMISSION_MODES:
        raise fail(f"unknown permission mode {given!r}; one of {', '.join(PERMISSION_MODES)}")
    if given == PermissionMode.ASK and not conversing:
        raise fail("permission mode 'ask' needs someone to answer: a person (`scribe`), or approvals answered on "
                   "stdin (--input-format stream-json); otherwise use read-only, accept-edits or full-auto")
    return PermissionMode(given)


class OneTurn:
    """The run's one turn through the core, shown in the output asked for."""

    def __init__(self, message: UserMessage, output: OutputFormat, said: RunLines) -> None:
        self.message, self.output, self.said = message, output, said
        self.turn = TurnFigures(said.price)
        self.failed_commits: list[CommitFailed] = []
        self.ended: TurnEnded | None = None
        self.stream = StreamJson(price=said.price, summary=said.summary) if output is OutputFormat.stream_json else None
        self.text = TextSink() if output is OutputFormat.text else None

    def show(self, event: Event) -> None:
        self.said(event)
        if self.said.before_session(event):
            return
        self.turn.count(event)
        if isinstance(event, CommitFailed):
            self.failed_commits.append(event)
        if isinstance(event, TurnEnded):
            self.ended = event
        if self.stream is not None:
            self.stream(event)
        elif self.text is not None and not isinstance(event, SessionOpened | Curated):
            self.text(event)

    def drive(self, agent: Agent) -> int:
        """The turn, and its exit code."""
        driver.drive(agent.start(), self.show)
        driver.drive(agent.run(self.message), self.show)
        ended, output = self.ended, self.output
        assert ended is not None, "a turn always ends with TurnEnded"
        if output is OutputFormat.json:
            session = agent.session
            print(json.dumps({
                "session_id": session.id, "log": str(session.path),
                "result": ended.text, "stop_reason": ended.reason, "error": ended.error,
                "calls": ended.calls, "usage": self.turn.totals.as_dict(), "notes": self.said.notes,
                "memory": session.digest.health.as_dict(),
            }, ensure_ascii=False))
        elif ended.error and output is OutputFormat.text:
            print(f"scribe: {visible(ended.error)}", file=sys.stderr)
        elif ended.reason == "max_turns" and output is OutputFormat.text:
            print(f"scribe: stopped after {ended.calls} model calls (--max-turns); "
                  f"continue with: scribe run -c '...'", file=sys.stderr)
        if output is not OutputFormat.text:  # the text output showed them as they came
            for failure in self.failed_commits:
                print(f"scribe: {visible(failure.text)}", file=sys.stderr)
        code = EXIT_FOR.get(ended.reason, EXIT_FAILED)
        # The commit the person asked for did not happen: the run did not do all it was asked.
        return EXIT_FAILED if self.failed_commits and code == EXIT_OK else code


class Conversation:
    """A session over stdin: every event out as stream-json, until the input ends."""

    def __init__(self, said: RunLines) -> None:
        self.said = said
        self.stream = StreamJson(price=said.price, summary=said.summary)
        self.failed = False

    def show(self, event: Event) -> None:
        self.said(event)
        if self.said.before_session(event):
            return
        self.stream(event)
        if isinstance(event, TurnEnded) and event.reason in ("error", "refusal"):
            self.failed = True

    def drive(self, agent: Agent) -> int:
        """The turns the input asks for, and the run's exit code."""
        from .stream_input import read

        driver.drive(agent.start(), self.show)
        done = threading.Event()
        read(sys.stdin, agent.submit, self.stream.write, done)
        try:
            driver.drive(agent.events(), self.show)
        finally:
            done.set()
        return EXIT_FAILED if self.failed else EXIT_OK


@dataclass
class RunLines:
    """What a run says on stderr around its turns: the curations of earlier sessions worth a
    line (also kept for the JSON outputs, which say them instead: `quiet`), and what is worth a
    note about the session it runs in."""

    quiet: bool
    notes: list[str] = field(default_factory=list)
    prompt: str | None = None  # once read
    agent: Agent | None = None
    session: Session | None = None  # once opened (it outlives the agent's close, for the last line)
    opened_at: int = 0  # the session's events when it opened: the prompt comes after

    def stopped(self, stop: Stopped) -> str:
        """The closing line of a run a signal ended: only what happened is said."""
        session = self.session
        recorded = session is not None and (self.prompt is None or any(
            isinstance(e, UserEvent) and e.text == self.prompt for e in session.events[self.opened_at:]))
        if session is None or not recorded:
            return f"scribe: {stop} before the prompt was recorded; nothing was sent: run it again"
        return (f"scribe: {stop}; what it was running was ended and recorded in session {session.id}; "
                "`scribe run -c` continues it")

    def price(self, usage: UsageEvent) -> tuple[float | None, float | None]:
        """The opening's prices, looked up at each call (they are read as the agent opens)."""
        assert self.agent is not None, "a call is priced only once the agent runs"
        return self.agent.opened.prices.price_usage(usage)

    def summary(self) -> dict[str, Any]:
        """What the JSON outputs add about the session: its log, memory health, the notes."""
        agent = self.agent
        if agent is None or not agent.has_session:
            return {"notes": list(self.notes)}
        return {"log": str(agent.session.path), "memory": agent.session.digest.health.as_dict(),
                "notes": list(self.notes)}

    def __call__(self, event: Event) -> None:
        if isinstance(event, Curated) and event.noteworthy:
            self.notes.append(event.text)
            if not self.quiet:
                print(f"scribe: {visible(event.text)}", file=sys.stderr)
        elif isinstance(event, SessionOpened):
            if self.agent is not None and self.agent.has_session:
                self.session = self.agent.session
                self.opened_at = len(self.session.events)
            for problem in event.problems:
                print(f"scribe: note: {event.path.name} {visible(problem)}", file=sys.stderr)
            for notice in event.notices:
                print(f"scribe: note: {visible(notice)}", file=sys.stderr)
            for line in event.mcp:
                print(f"scribe: {visible(line)}", file=sys.stderr)
        elif self.before_session(event):
            print(f"scribe: {visible(event.text)}", file=sys.stderr)

    def housekeeping(self, event: Event) -> None:
        """What was done after the answer, before exiting (housekeeping = "inline"): on stderr,
        whatever the output (the answer is out, and the JSON outputs are written)."""
        if isinstance(event, Compressed):
            print(f"scribe: {visible(compressed_line(event))}", file=sys.stderr)
        elif isinstance(event, Curated):
            if event.noteworthy:
                print(f"scribe: {visible(event.text)}", file=sys.stderr)
        elif isinstance(event, Notice):
            print(f"scribe: {visible(event.text)}", file=sys.stderr)

    def before_session(self, event: Event) -> TypeGuard[Notice]:
        """A notice before the session opens (what an untrusted workspace's files would have
        changed): said here, on stderr, whatever the output."""
        return isinstance(event, Notice) and self.agent is not None and not self.agent.has_session
