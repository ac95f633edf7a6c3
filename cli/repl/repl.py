"""`scribe` with no command: the interactive session, a front end on the agent core
(agent/core.py).

    read a line -> a slash command (a submission, or something read from the log), or a message
                   -> the core's events shown as they happen -> read the next

The core runs in this (main) thread. Esc during a turn cancels it through the core
(`Agent.cancel`, from the key-reading thread: keys.py); Ctrl-C raises KeyboardInterrupt wherever
the turn is, which the core handles the same way, and a Ctrl-C that lands while an event is being
drawn is handed back to the core where it yielded that event. Either way the log stays whole and
the session goes on. Ctrl-D during a turn cancels it the same way, and then the REPL ends, as
Ctrl-D at the prompt ends it. An approval, the trust question and a server's confirmation are
events the core waits on: the REPL asks the person and submits the answer.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from rich.text import Text

from scribe.agent import driver
from scribe.agent.config import AgentConfig, Overrides, SessionChoice
from scribe.agent.core import Agent
from scribe.agent.finishing.finisher import hand_over
from scribe.agent.protocol import (
    AcceptPlan,
    ActionDone,
    ApprovalAnswer,
    ApprovalRequested,
    Compact,
    Compacted,
    Event,
    Failed,
    LifeEvent,
    ModeChanged,
    ModelSwitched,
    RunShell,
    ServersAnswer,
    ServersToConfirm,
    SessionOpened,
    SetMode,
    ShellDone,
    SubagentEvent,
    Submission,
    TrustAnswer,
    TrustRequested,
    TurnEnded,
    UserMessage,
)
from scribe.agent.session.session import Session, store_for
from scribe.log.store import SessionFile, SessionNotFound
from scribe.model.events import Notice
from scribe.settings.commands import CommandSet, load_commands
from scribe.settings.files import find_workspace, state_dir
from scribe.settings.values import PERMISSION_MODES, PermissionMode

from ..exits import cli_errors, fail, warn
from ..headless import subagent_line
from ..preload import preload_sdk
from ..rule_flags import rules_of
from ..signals import Ending, Stopped, ending_signals
from ..trust import ask_servers, ask_trust
from ..visible import visible
from .approve import PersonApprover
from .commands import COMMANDS, ExitRepl, command_help, dispatch, message_of
from .excerpts import fold
from .input import CYCLE_MODE, InputArea
from .keys import TurnKeys
from .lifecycle import exit_line, show_life
from .memory_notes import MemoryNotes
from .question import GUARD_S, Answers, ask
from .shell import shell_command, with_attachments
from .stats import Numbers, numbers, tokens, toolbar_text
from .view import RUNNING, THINKING, View, make_console

# In the REPL a refused call names the command that allows it, not the flag.
MODE_COMMAND = "/mode"

# Shift-Tab's cycle of permission modes, as Claude Code's; from any other mode, the first.
MODE_CYCLE = (PermissionMode.ASK, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN)
# The answers a plan is accepted with, and the mode each carries it out in.
PLAN_MODES = {"accept": PermissionMode.ACCEPT_EDITS, "full-auto": PermissionMode.FULL_AUTO,
              "ask": PermissionMode.ASK}
PLAN_ANSWERS = Answers({"a": "accept", "f": "full-auto", "y": "ask"},
                       {"a": "accept", "accept": "accept", "f": "full-auto", "full-auto": "full-auto", "y": "ask",
                        "ask": "ask"}, on_escape="keep planning",
                       meaning={"accept": "carry it out, accepting edits", "ask": "carry it out, asking before each"})


def next_mode(mode: PermissionMode) -> PermissionMode:
    return MODE_CYCLE[(MODE_CYCLE.index(mode) + 1) % len(MODE_CYCLE)] if mode in MODE_CYCLE else MODE_CYCLE[0]


# Further Ctrl-C presses this soon after the one that cancelled a turn are ignored: they would
# otherwise land in the middle of recording the interrupt.
REPEAT_WINDOW_S = 1.0


@contextmanager
def cancellable(window_s: float = REPEAT_WINDOW_S) -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt, but not twice within `window_s`."""
    last = -window_s

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal last
        now = time.monotonic()
        if now - last < window_s:
            return
        last = now
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Repl:
    """The interactive session over an agent core: its sessions come and go (`/clear`,
    `/resume`), its MCP servers and model client stay."""

    def __init__(self, agent: Agent, view: View) -> None:
        self.agent, self.view = agent, view
        self.workspace = find_workspace(agent.config.cwd)
        self.keys = TurnKeys(on_escape=agent.cancel)
        view.typed = self.keys.typed  # shown as it is typed during a turn
        self.memory_notes = MemoryNotes()
        self.custom = CommandSet({})
        self._area: InputArea | None = None
        self._numbers: Numbers | None = None
        self._asked: Submission | None = None  # what runs now
        self._ended: TurnEnded | None = None  # how its turn ended
        # SIGTERM and SIGHUP end the REPL (cli/signals.py); start() installs the handlers.
        self.ending = Ending(())

    @property
    def area(self) -> InputArea:
        if self._area is None:
            self._area = InputArea(self.workspace, state_dir(self.workspace) / "history",
                                   lambda: command_help(self.custom), self.toolbar, self.keys, self.busy)
        return self._area

    @property
    def session(self) -> Session:
        return self.agent.session

    @property
    def settings(self) -> Any:
        """The settings new sessions of this REPL start with (`/model`, `/mode` change them)."""
        return self.agent.opened.settings

    # -- opening ------------------------------------------------------------------------------

    def begin(self) -> None:
        """Open the agent: its questions asked, its life shown, the person's and (trusted)
        workspace's own slash commands loaded (settings/commands.py)."""
        self.run_quietly(self.agent.start())
        self.custom = load_commands(self.workspace, self.agent.opened.files.trust, COMMANDS)
        for line in self.custom.notes:
            self.view.warn(line)
        self.refresh()

    # -- submissions ----------------------------------------------------------------------------

    def run(self, submission: Submission) -> None:
        """One submission's work through the core, shown as it happens; Esc and Ctrl-C cancel it.
        A compaction the person asked for shows every memory event; a turn only the first."""
        self._asked, self._ended = submission, None
        try:
            with cancellable(), self.keys.running():
                self.run_quietly(self.agent.run(submission))
        finally:
            self._asked = None

    def run_quietly(self, events: Generator[Event, None, None]) -> None:
        """`events` shown, without the turn's keys (the opening, before any prompt)."""
        try:
            driver.drive(events, self.show)
        except KeyboardInterrupt:
            # Landed outside the core's own handling, as the work ended: nothing is left open
            # (the core closes what a cancelled turn left), and the session goes on.
            self.view.warn("cancelled")

    def show(self, event: Event) -> None:
        """One event on screen; a question asked of the person, and the answer submitted."""
        if isinstance(event, ApprovalRequested):
            decision, keep = self.approver.ask(event.call, event.question, event.agent)
            self.agent.submit(ApprovalAnswer(event.id, decision, keep=keep))
        elif isinstance(event, TrustRequested):
            self.agent.submit(TrustAnswer(ask_trust(self.view.console, event)))
        elif isinstance(event, ServersToConfirm):
            self.agent.submit(ServersAnswer(event.name, ask_servers(self.view.console, event)))
        elif isinstance(event, SessionOpened):
            self.view.task = None  # the task list is the session's
            show_life(self.view, event, self.agent.session)
            self.agent.loop.policy.how_to_allow = MODE_COMMAND
        elif isinstance(event, Compacted):
            self.view.note(f"reflect: context ~{tokens(event.before)} → ~{tokens(event.after)} tokens "
                           f"(observations {tokens(event.observations_before)} → {tokens(event.observations_after)}, "
                           f"raw {tokens(event.raw_before)} → {tokens(event.raw_after)})")
        elif isinstance(event, ShellDone):
            self.shell_done(event)
        elif isinstance(event, TurnEnded):
            self._ended = event
            self.view.handle(event)
        elif isinstance(event, SubagentEvent):
            line = subagent_line(event)
            if line is not None:
                self.view.note(line)
        elif isinstance(event, ModeChanged):
            self.view.note(f"permission mode {event.mode}")
        elif isinstance(event, ModelSwitched):
            self.view.note(f"model {event.model} from the next call (was {event.previous}); its first call writes "
                           "the prompt cache anew" if event.changed else f"already on {event.model}")
        elif isinstance(event, ActionDone):
            (self.view.note if event.ok else self.view.error)(event.text)
        elif isinstance(event, Failed):
            self.view.error(event.text)
        elif isinstance(event, Notice) and not self.agent.has_session:
            self.view.warn(f"scribe: {event.text}")  # before the session: what trust ignored
        elif isinstance(event, LifeEvent):
            show_life(self.view, event, self.agent.session if self.agent.has_session else None)
        elif isinstance(self._asked, Compact):
            self.view.handle(event)
        else:
            shown = self.memory_notes.shown(event)
            if shown is not None:
                self.view.handle(shown)

    @property
    def approver(self) -> PersonApprover:
        return PersonApprover(self.view, self.area, self.agent.loop.context, self.keys)

    def shell_done(self, ran: ShellDone) -> None:
        head, tail, hidden = fold(visible(ran.output))
        text = Text()
        for line in head:
            text.append(f"  │ {line}\n", style="dim")
        if hidden:
            text.append(f"  │ … {hidden} more line{'s' if hidden != 1 else ''} …\n", style="italic dim")
        for line in tail:
            text.append(f"  │ {line}\n", style="dim")
        self.view.console.print(text, end="")
        if ran.planted is not None:
            self.view.warn(ran.planted)
        self.view.note("(the command and its output go to the model with your next message)")

    # -- numbers for the toolbar and /stats -------------------------------------------------------

    def numbers(self) -> Numbers:
        agent = self.agent
        memory = agent.loop.memory
        assert memory is not None, "the opening always gives the loop a compressor"
        session = agent.session
        last = memory.last_counted(session)
        return numbers(session.events, agent.loop.policy.mode, agent.context(), session.chunks, session.calls(),
                       agent.opened.prices.price_usage, memory.window(session), memory.limits(session),
                       agent.opened.client.server, counted=last.tokens.prompt_tokens if last else None)

    def refresh(self) -> None:
        self._numbers = self.numbers() if self.agent.has_session else None

    def toolbar(self, width: int | None = None) -> str:
        # The numbers are computed after each turn: prompt-toolkit asks on every redraw.
        line = "" if self._numbers is None else toolbar_text(self._numbers, width)
        busy = self.running()
        if busy:
            line = " " + " · ".join(busy) + (" │" + line if line else " ")
        return line

    def running(self) -> list[str]:
        """The work going on beside the prompt that the bar names."""
        busy = []
        curation = self.agent.opened.curation if self.agent.started else None
        if curation is not None and curation.running:
            busy.append("curating notes…")
        if self.agent.has_session and self.agent.compressing:
            busy.append("compressing memory…")
        return busy

    def busy(self) -> bool:
        return bool(self.running())

    # -- the loop -------------------------------------------------------------------------------

    def loop(self) -> None:
        armed = False  # Ctrl-C was pressed on an empty line; a second one exits
        while True:
            # A signal that ends scribe and was recorded where it landed (a turn, a curation that
            # skipped on it): scribe ends now.
            self.ending.raise_if_received()
            for curated in self.agent.curated():
                show_life(self.view, curated, None)
            try:
                line = self.area.read()
            except Stopped:
                raise
            except KeyboardInterrupt:
                if armed:
                    return
                armed = True
                self.view.note("(Ctrl-C again or Ctrl-D to exit)")
                continue
            except EOFError:
                return
            armed = False
            if line == CYCLE_MODE:
                self.run(SetMode(next_mode(self.agent.loop.policy.mode)))
                self.refresh()
                continue
            if not line.strip():
                continue
            try:
                self.act(line)
            except ExitRepl:
                return
            except Stopped:
                raise
            except KeyboardInterrupt:  # landed outside the turn's own handling, as it ended
                self.view.warn("cancelled")
            self.view.pause()
            if self.keys.leaving:
                self.view.note("(Ctrl-D: scribe ends)")
                return
            self.refresh()

    def act(self, line: str) -> None:
        """A slash command, a shell command (`!...`), a literal message (`//...`, `!!...`), or a
        message for the model (its `@path` files attached)."""
        for event in self.agent.take_ahead():
            self.show(event)
        command = shell_command(line)
        message = message_of(line)
        if command is not None:
            if not command:
                self.view.error("! needs a command after it: !git status runs `git status` (!! starts a message "
                                "with !)")
                return
            self.view.busy(RUNNING)
            self.run_shell(command)
        elif message is None:
            with cancellable(), self.keys.running():
                sent = dispatch(self, line)
            if sent is not None:  # a custom command's text, /init's instruction: a turn of its own
                attached = with_attachments(self.agent.loop.context, self.view, sent.text)
                self.turn(UserMessage(attached.text, tuple(attached.images), sent.command or None,
                                      attached.attached_at))
        else:
            attached = with_attachments(self.agent.loop.context, self.view, message)
            self.turn(UserMessage(attached.text, tuple(attached.images), attached_at=attached.attached_at))

    def run_shell(self, command: str) -> None:
        try:
            self.run(RunShell(command))
        finally:
            self.view.pause()

    def turn(self, message: UserMessage | AcceptPlan) -> None:
        self.view.busy(THINKING)  # at once: the first model call may be a while in coming
        self.run(message)
        self.view.console.print()
        ended = self._ended
        if ended is not None and ended.reason == "end_turn" and ended.text.strip() \
                and self.agent.has_session and self.agent.loop.policy.mode == PermissionMode.PLAN:
            self.offer_plan()

    def offer_plan(self) -> None:
        """A turn in plan mode ended with a plan: the person accepts it (and says in which mode it
        is carried out), or types what to change (sent at once, still planning), or keeps planning."""
        with self.keys.asking() as aside:
            choice = ask("  accept this plan? a: carry it out, accepting edits · f: full-auto · y: asking before "
                         "each change, or type what to change › ", PLAN_ANSWERS, aside=aside,
                         guard_s=GUARD_S if self.keys.on_terminal() else 0.0)
            self.keys.answered(choice)
        if choice.word == "message" and choice.message.strip():
            self.turn(UserMessage(choice.message))
        elif choice.word in PLAN_MODES:
            self.turn(AcceptPlan(PLAN_MODES[choice.word]))
        else:
            self.view.note("still planning: say what to change, or /mode when you want to carry it out")

    def close(self) -> None:
        for event in self.agent.finish_ahead():
            self.show(event)
        session = self.agent.session if self.agent.has_session else None
        ended = self.agent.close()
        for line in ended.lines:
            warn(line)
        if session is not None:
            try:
                continued: SessionFile | None = store_for(self.workspace).to_continue(self.workspace).found
            except SessionNotFound:
                continued = None
            self.view.note(exit_line(session, continued))
        for done in hand_over(ended.left):  # shown only when it is done before scribe exits
            self.show(done)


def start(*, continue_: bool, resume: str | None, permission_mode: str | None, model: str | None,
          auto_commit: bool | None = None, trust_workspace: bool = False, allowed_tools: list[str] | None = None,
          disallowed_tools: list[str] | None = None) -> None:
    """Open the REPL in the workspace of the current directory. A workspace whose own config
    files are not trusted is asked about first (cli/trust.py)."""
    with cli_errors():
        if continue_ and resume:
            raise fail("give --continue or --resume, not both")
        if permission_mode is not None and permission_mode not in PERMISSION_MODES:
            raise fail(f"unknown permission mode {permission_mode!r}; one of {', '.join(PERMISSION_MODES)}")
        mode = PermissionMode(permission_mode) if permission_mode else None
        console = make_console()
        config = AgentConfig(Path.cwd(), SessionChoice(continue_, resume, model),
                             Overrides(permission_mode=mode, model=model, auto_commit=auto_commit),
                             trust_workspace=trust_workspace, person=True, answers=True,
                             rules=rules_of(allowed_tools, disallowed_tools), finish_after=True)
        repl = Repl(Agent(config), View(console))
        with repl.keys.session(), ending_signals(resume="scribe -c") as repl.ending:
            try:
                repl.begin()
                # The SDK is imported, and the earlier sessions curated, while the person types the
                # first message, from when the prompt is drawn: a thread started sooner takes the
                # interpreter's lock from the start-up half the time, and the prompt comes later.
                def warm_up() -> None:
                    preload_sdk()
                    repl.agent.start_curation()

                repl.area.once_drawn(warm_up)
                repl.loop()
            finally:
                repl.close()

