"""`scribe` with no command: the interactive session.

    read a line -> a slash command, or one agent turn shown as it happens -> read the next

The agent runs in this (main) thread, so Ctrl-C during a turn raises KeyboardInterrupt wherever
the turn is: in the model call or a running command, the agent records an `interrupt` event
and ends the turn (run_command kills its process group on the way out); if it lands while an
event is being drawn, `drive` hands it to the agent so the same happens. Either way the log
stays whole and the session goes on. Esc during a turn takes the same path (keys.py sends the
main thread a SIGINT), and keys typed during a turn wait for the next prompt. Ctrl-D during a
turn cancels it the same way, and then the REPL ends, as Ctrl-D at the prompt ends it.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from scribe.agent import driver
from scribe.agent.ahead import AheadCompression, left_unfinished, works_ahead
from scribe.agent.assembly import PERSON_WAITS_S, Opened, Opening, SessionChoice, open_agent
from scribe.agent.compress import ContextSize
from scribe.agent.lifecycle import curating
from scribe.agent.loop import Agent
from scribe.agent.protocol import AgentEvent, LifeEvent, TurnEnded
from scribe.agent.session import Session, notes_path, store_for
from scribe.log.events import InterruptEvent
from scribe.log.open_calls import unanswered_tool_uses
from scribe.log.pricing import PriceBook
from scribe.log.store import SessionFile, SessionNotFound
from scribe.model.client import ModelClient, preload_sdk
from scribe.settings.commands import CommandSet, load_commands
from scribe.settings.files import state_dir
from scribe.settings.values import Settings
from scribe.workspace.images import PreparedImage

from ..exits import cli_errors, fail, warn
from ..signals import Ending, Stopped, ending_signals
from ..trust import ask, confirm_servers
from .approve import PersonApprover
from .commands import COMMANDS, ExitRepl, command_help, dispatch, message_of
from .input import InputArea
from .keys import TurnKeys
from .lifecycle import exit_line, show_life
from .memory_notes import MemoryNotes
from .shell import run_bang, shell_command, with_attachments
from .stats import Numbers, numbers, toolbar_text
from .view import THINKING, View, make_console

# In the REPL a refused call names the command that allows it, not the flag.
MODE_COMMAND = "/mode"

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


def drive(turn: Generator[AgentEvent, None, TurnEnded], show: Callable[[AgentEvent], None]) -> TurnEnded:
    """Run a turn to its end through the agent's driver (agent/driver.py). A Ctrl-C while its
    end is shown has nothing left to cancel; one that escapes the agent (raised before its
    handler was in place, or inside it) ends the turn here, and Repl.run_turn closes whatever
    tool call it left open."""

    def shown(event: AgentEvent) -> None:
        try:
            show(event)
        except KeyboardInterrupt:
            if not isinstance(event, TurnEnded):
                raise

    try:
        return driver.drive(turn, shown)
    except KeyboardInterrupt:
        ended = TurnEnded("interrupted", "", 0)
        show(ended)
        return ended


class Repl:
    """The interactive session over an opened agent (agent/assembly.py): its sessions come and go
    (`/clear`, `/resume`), its MCP servers and model client stay."""

    def __init__(self, opened: Opened, view: View, *, area: InputArea | None = None) -> None:
        self.opened, self.view = opened, view
        self.workspace = opened.workspace
        # The person's and (trusted) workspace's own slash commands (settings/commands.py).
        self.custom: CommandSet = load_commands(self.workspace, opened.config.trust, COMMANDS)
        for line in self.custom.notes:
            view.warn(line)
        self.keys = TurnKeys()
        self.memory_notes = MemoryNotes()
        self.area = area or InputArea(self.workspace, state_dir(self.workspace) / "history",
                                      lambda: command_help(self.custom), self.toolbar, self.keys)
        self._numbers: Numbers | None = None
        # SIGTERM and SIGHUP end the REPL (cli/signals.py); start() installs the handlers.
        self.ending = Ending(())

    @property
    def agent(self) -> Agent:
        return self.opened.agent

    @property
    def session(self) -> Session:
        return self.agent.session

    @property
    def settings(self) -> Settings:
        """The settings new sessions of this REPL start with (`/model`, `/mode` change them)."""
        return self.opened.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        self.opened.settings = settings

    @property
    def model(self) -> ModelClient:
        return self.opened.client

    @property
    def prices(self) -> PriceBook:
        return self.opened.prices

    # -- sessions -------------------------------------------------------------------------------

    def open(self, choice: SessionChoice) -> None:
        """Run in the session `choice` names (ending the current one first), greeted. A wait for a
        new one's MCP servers is said at once, and Ctrl-C skips it."""
        self.finish_ahead()
        approver = PersonApprover(self.view, self.area, lambda: self.agent.context, self.keys)
        agent = self.opened.open(choice, self.show_life, approver)
        agent.policy.how_to_allow = MODE_COMMAND
        # A person waits on each call: compression the window does not need goes on beside it.
        agent.compress_off_path = self.settings.observe_ahead != "never"
        self.view.task = None  # the task list is the session's
        self.refresh()

    def start_new(self) -> None:
        self.open(SessionChoice())

    def show_life(self, event: LifeEvent) -> None:
        show_life(self.view, event)

    def resume(self, id_or_prefix: str) -> None:
        found = store_for(self.workspace).find(id_or_prefix, self.workspace)
        if found.id == self.session.id:
            self.view.note(f"already in session {found.id}")
            return
        self.open(SessionChoice(session_id=found.id))

    def set_mode(self, mode: str) -> None:
        self.opened.set_mode(mode)  # and for /clear
        self.refresh()

    def close(self) -> None:
        self.finish_ahead()
        if self.opened.has_session:
            session = self.session
            self.opened.end()
            try:
                continued: SessionFile | None = store_for(self.workspace).to_continue(self.workspace).found
            except SessionNotFound:
                continued = None
            self.view.note(exit_line(session, continued))

    def curate(self, agent: Agent) -> None:
        """/notes curate: the session's notes merged now."""
        driver.drive(curating(agent.session, self.model, self.settings, notes_path(self.workspace), skippable=True),
                     self.show_life)

    def say_curated(self) -> None:
        """What the curation of earlier sessions, running in the background, has finished."""
        for curated in self.opened.curated():
            self.show_life(curated)

    # -- numbers for the toolbar and /stats -------------------------------------------------------

    def context(self) -> ContextSize:
        memory = self.agent.memory
        assert memory is not None, "the assembly always gives the agent a compressor"
        return memory.context(self.session)

    def numbers(self) -> Numbers:
        memory = self.agent.memory
        assert memory is not None, "the assembly always gives the agent a compressor"
        return numbers(self.session.events, self.agent.policy.mode, self.context(), self.session.chunks,
                       self.session.calls(), self.prices.price_usage, memory.window(self.session),
                       memory.limits(self.session), self.model.server)

    def refresh(self) -> None:
        self._numbers = self.numbers()

    def toolbar(self, width: int | None = None) -> str:
        # The numbers are computed after each turn: prompt-toolkit asks on every redraw.
        line = "" if self._numbers is None else toolbar_text(self._numbers, width)
        busy = []
        curation = self.opened.curation
        if curation is not None and curation.running:
            busy.append("curating notes…")
        if self.opened.has_session and self.agent.ahead is not None and not self.agent.ahead.done:
            busy.append("compressing memory…")
        if busy:
            line = " " + " · ".join(busy) + (" │" + line if line else " ")
        return line

    # -- the loop -------------------------------------------------------------------------------

    def loop(self) -> None:
        armed = False  # Ctrl-C was pressed on an empty line; a second one exits
        while True:
            # A signal that ends scribe and was recorded where it landed (a turn, a curation that
            # skipped on it): scribe ends now.
            self.ending.raise_if_received()
            self.say_curated()
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
            if message_of(line) is not None:
                self.compress_ahead()

    def compress_ahead(self) -> None:
        """After a turn, on a slow server: what the next call would compress, compressed now in a
        thread while the person reads and types (agent/ahead.py). Nobody waits for it."""
        agent = self.agent
        self.take_ahead()
        if agent.ahead is None and agent.memory is not None and works_ahead(
                self.settings.observe_ahead, os.environ.get("ANTHROPIC_BASE_URL"), self.session.events):
            agent.ahead = AheadCompression(agent.memory, self.session)

    def take_ahead(self) -> None:
        """What a compression between turns made, taken into the log once it has ended, and shown."""
        agent = self.opened.agent if self.opened.has_session else None
        if agent is None or agent.ahead is None or not agent.ahead.done:
            return
        ahead, agent.ahead = agent.ahead, None
        for event in ahead.take():
            self.show(event)
        self.refresh()

    def finish_ahead(self) -> None:
        """The session ends: a compression between turns gets a moment to end, and is taken; one
        still waiting on its model is left, and the log says so (agent/ahead.py)."""
        if not self.opened.has_session or self.agent.ahead is None:
            return
        if not self.agent.ahead.wait(PERSON_WAITS_S):
            self.agent.ahead = None
            left_unfinished(self.session)
            return
        self.take_ahead()

    def act(self, line: str) -> None:
        """A slash command, a shell command (`!...`), a literal message (`//...`, `!!...`), or a
        message for the model (its `@path` files attached)."""
        self.take_ahead()
        command = shell_command(line)
        message = message_of(line)
        if command is not None:
            with cancellable(), self.keys.running():
                run_bang(self.agent, self.view, command, MODE_COMMAND)
        elif message is None:
            with cancellable(), self.keys.running():
                sent = dispatch(self, line)
            if sent is not None:  # a custom command's text, /init's instruction: a turn of its own
                attached = with_attachments(self.agent, self.view, sent.text)
                self.run_turn(attached.text, attached.images, sent.command, attached_at=attached.attached_at)
        else:
            attached = with_attachments(self.agent, self.view, message)
            self.run_turn(attached.text, attached.images, attached_at=attached.attached_at)

    def run_turn(self, text: str, images: Sequence[PreparedImage] = (), command: dict[str, Any] | None = None,
                 *, attached_at: int | None = None) -> TurnEnded:
        self.view.busy(THINKING)  # at once: the first model call may be a while in coming
        with cancellable(), self.keys.running():
            ended = drive(self.agent.turn(text, images, command, attached_at=attached_at), self.show)
            dangling = unanswered_tool_uses(self.session.events)
            if dangling:  # only if an interrupt escaped the agent's own handler
                self.session.append(InterruptEvent, tool_use_ids=dangling, reason="cancelled by the user")
                self.session.sync()
        self.view.console.print()
        return ended

    def show(self, event: AgentEvent) -> None:
        """One event of a turn on screen; memory's own events only when worth a line (memory_notes.py)."""
        shown = self.memory_notes.shown(event)
        if shown is not None:
            self.view.handle(shown)

def start(*, continue_: bool, resume: str | None, permission_mode: str | None, model: str | None,
          auto_commit: bool | None = None, trust_workspace: bool = False) -> None:
    """Open the REPL in the workspace of the current directory. A workspace whose own config
    files are not trusted is asked about first (cli/trust.py)."""
    with cli_errors():
        if continue_ and resume:
            raise fail("give --continue or --resume, not both")
        console = make_console()
        opening = Opening(Path.cwd(), SessionChoice(continue_, resume, model), person=True,
                          trust_workspace=trust_workspace,
                          flags={"permission_mode": permission_mode, "model": model, "auto_commit": auto_commit})
        with open_agent(opening, ask_trust=lambda found: ask(console, found), open_session=False, tell=warn,
                        confirm_servers=lambda workspace, settings, config: confirm_servers(
                            console, workspace, settings, config)) as opened:
            repl = Repl(opened, View(console))
            # The SDK is imported, and the earlier sessions curated, while the person types the
            # first message, from when the prompt is drawn: a thread started sooner takes the
            # interpreter's lock from the start-up half the time, and the prompt comes later.
            repl.area.once_drawn(lambda: (preload_sdk(), opened.start_curation()))
            with repl.keys.session(), ending_signals(resume="scribe -c") as repl.ending:
                try:
                    repl.open(opening.choice)
                    repl.loop()
                finally:
                    repl.close()
