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

import dataclasses
import os
import signal
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from scribe.agent import driver
from scribe.agent.ahead import AheadCompression, works_ahead
from scribe.agent.compress import ContextSize
from scribe.agent.lifecycle import curating, ending
from scribe.agent.loop import Agent
from scribe.agent.mcptools import open_hub
from scribe.agent.protocol import AgentEvent, LifeEvent, TurnEnded
from scribe.agent.runtime import SessionChoice, begin, choose
from scribe.agent.session import Session, notes_path, open_session, store_for
from scribe.log.events import InterruptEvent
from scribe.log.open_calls import unanswered_tool_uses
from scribe.log.pricing import PriceBook
from scribe.log.store import SessionFile, SessionNotFound
from scribe.model.client import ModelClient, preload_sdk
from scribe.settings.commands import CommandSet, load_commands
from scribe.settings.files import ConfigFiles, find_workspace, read_config, state_dir, trust_of
from scribe.settings.hooks import read_hooks
from scribe.settings.prices import price_book
from scribe.settings.values import REPL_DEFAULTS, Settings, load_settings
from scribe.tools.mcp.hub import McpHub

from ..exits import cli_errors, fail
from ..signals import Ending, Stopped, ending_signals
from ..trust import ask
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
    def __init__(self, workspace: Path, settings: Settings, view: View, *, model: ModelClient | None = None,
                 area: InputArea | None = None, hub: McpHub | None = None, prices: PriceBook | None = None,
                 config: ConfigFiles | None = None) -> None:
        self.workspace, self.settings, self.view = workspace, settings, view
        config = config or read_config(workspace)
        self.prices = prices if prices is not None else price_book(config)
        self.hooks = read_hooks(workspace, config)
        self.custom: CommandSet = load_commands(workspace, config.trust, COMMANDS)
        for line in self.custom.notes:
            view.warn(line)
        # The MCP servers of this REPL, shared by its sessions (each pins its own tools).
        self.hub = hub if hub is not None else McpHub([], workspace)
        # One client for every session of this REPL: its connections stay open between turns.
        self.model = model or ModelClient.for_settings(settings)
        self.keys = TurnKeys()
        self.memory_notes = MemoryNotes()
        self.area = area or InputArea(workspace, state_dir(workspace) / "history",
                                      lambda: command_help(self.custom), self.toolbar, self.keys)
        self._agent: Agent | None = None
        self._numbers: Numbers | None = None
        self._ahead: AheadCompression | None = None  # a compression running between turns
        # SIGTERM and SIGHUP end the REPL (cli/signals.py); start() installs the handlers.
        self.ending = Ending(())

    @property
    def agent(self) -> Agent:
        assert self._agent is not None, "open() a session first"
        return self._agent

    @property
    def session(self) -> Session:
        return self.agent.session

    # -- sessions -------------------------------------------------------------------------------

    def open(self, session: Session, *, resumed: bool) -> None:
        """Make `session` the current one (ending the previous first) and greet it."""
        self._end_current()
        approver = PersonApprover(self.view, self.area, lambda: self.agent.context, self.keys)
        self._agent = driver.drive(begin(self.workspace, self.settings, session, resumed=resumed, approver=approver,
                                         model=self.model, hub=self.hub), self.show_life)
        self._agent.policy.how_to_allow = MODE_COMMAND
        self._agent.hooks = self.hooks
        self.view.task = None  # the task list is the session's
        self.refresh()

    def start_new(self) -> None:
        # The old session ends first, so the new one starts with the notes it just curated.
        self._end_current()
        self.open(self.choose(SessionChoice()), resumed=False)

    def choose(self, choice: SessionChoice) -> Session:
        """The session to run in (agent/runtime.py): a wait for a new one's curation or MCP
        servers is said at once, and Ctrl-C skips it."""
        return driver.drive(choose(self.workspace, self.settings, choice, self.hub, model=self.model, skippable=True),
                            self.show_life)

    def show_life(self, event: LifeEvent) -> None:
        show_life(self.view, event)

    def resume(self, id_or_prefix: str) -> None:
        found = store_for(self.workspace).find(id_or_prefix, self.workspace)
        if found.id == self.session.id:
            self.view.note(f"already in session {found.id}")
            return
        self.open(open_session(found), resumed=True)

    def set_mode(self, mode: str) -> None:
        self.agent.policy.mode = mode
        self.settings = dataclasses.replace(self.settings, permission_mode=mode)  # and for /clear
        self.refresh()

    def close(self) -> None:
        self.finish_ahead()
        if self._agent is not None:
            session = self._agent.session
            self._end_current()
            try:
                continued: SessionFile | None = store_for(self.workspace).to_continue(self.workspace).found
            except SessionNotFound:
                continued = None
            self.view.note(exit_line(session, continued))

    def _end_current(self) -> None:
        """The current session ends: what it taught merged into the project notes, then released."""
        agent, self._agent = self._agent, None
        if agent is not None:
            driver.drive(ending(agent, self.model, self.settings, notes_path(self.workspace), skippable=True),
                         self.show_life)

    def curate(self, agent: Agent) -> None:
        """/notes curate: the session's notes merged now."""
        driver.drive(curating(agent.session, self.model, self.settings, notes_path(self.workspace), skippable=True),
                     self.show_life)

    # -- numbers for the toolbar and /stats -------------------------------------------------------

    def context(self) -> ContextSize:
        memory = self.agent.memory
        assert memory is not None, "build_agent always gives the agent a compressor"
        return memory.context(self.session)

    def numbers(self) -> Numbers:
        memory = self.agent.memory
        assert memory is not None, "build_agent always gives the agent a compressor"
        return numbers(self.session.events, self.agent.policy.mode, self.context(), self.session.chunks,
                       self.session.calls(), self.prices.price_usage, memory.window(self.session),
                       memory.limits(self.session))

    def refresh(self) -> None:
        self._numbers = self.numbers()

    def toolbar(self, width: int | None = None) -> str:
        # The numbers are computed after each turn: prompt-toolkit asks on every redraw.
        return "" if self._numbers is None else toolbar_text(self._numbers, width)

    # -- the loop -------------------------------------------------------------------------------

    def loop(self) -> None:
        armed = False  # Ctrl-C was pressed on an empty line; a second one exits
        while True:
            # A signal that ends scribe and was recorded where it landed (a turn, a curation that
            # skipped on it): scribe ends now.
            self.ending.raise_if_received()
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
        thread while the person reads and types (agent/ahead.py)."""
        memory = self.agent.memory
        if memory is not None and works_ahead(self.settings.observe_ahead, os.environ.get("ANTHROPIC_BASE_URL"),
                                              self.session.events):
            self._ahead = AheadCompression(memory, self.session)

    def finish_ahead(self) -> None:
        """Before anything else writes to the log: wait for the compression between turns, then
        show what it did. The wait is said, since the person asked for something meanwhile."""
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return
        if ahead.running:
            self.view.busy("finishing memory compression…  (the log has one writer: it cannot be cancelled)")
        try:
            for event in ahead.finish():
                self.view.handle(event)
        finally:
            self.view.pause()
        self.refresh()

    def act(self, line: str) -> None:
        """A slash command, a shell command (`!...`), a literal message (`//...`, `!!...`), or a
        message for the model (its `@path` files attached)."""
        self.finish_ahead()
        command = shell_command(line)
        message = message_of(line)
        if command is not None:
            with cancellable(), self.keys.running():
                run_bang(self.agent, self.view, command, MODE_COMMAND)
        elif message is None:
            with cancellable(), self.keys.running():
                sent = dispatch(self, line)
            if sent is not None:  # a custom command's text, /init's instruction: a turn of its own
                self.run_turn(with_attachments(self.agent, self.view, sent.text), sent.command)
        else:
            self.run_turn(with_attachments(self.agent, self.view, message))

    def run_turn(self, text: str, command: dict[str, Any] | None = None) -> TurnEnded:
        self.view.busy(THINKING)  # at once: the first model call may be a while in coming
        with cancellable(), self.keys.running():
            ended = drive(self.agent.turn(text, command), self.show)
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
        workspace = find_workspace(Path.cwd())
        console = make_console()
        trust = trust_of(workspace, granted=trust_workspace)
        if not trust.trusted:
            trust = ask(console, trust)
        flags = {"permission_mode": permission_mode, "model": model, "auto_commit": auto_commit}
        config = read_config(workspace, trust)
        settings = load_settings(workspace, flags, defaults=REPL_DEFAULTS, config=config)
        preload_sdk()  # while the person types the first message
        hub = open_hub(workspace, settings, config)
        try:
            repl = Repl(workspace, settings, View(console), hub=hub, prices=price_book(config), config=config)
            with repl.keys.session(), ending_signals(resume="scribe -c") as repl.ending:
                session = repl.choose(SessionChoice(continue_, resume, model))
                try:
                    repl.open(session, resumed=continue_ or bool(resume))
                    repl.loop()
                finally:
                    if repl.ending.received is not None:  # ending on a signal: no model call for the notes
                        repl.settings = dataclasses.replace(repl.settings, curate_notes=False)
                    repl.close()
        finally:
            hub.close()  # stops the MCP servers
