"""Assembling an agent: one place, for every front end (`scribe run`, the REPL, `scribe demo`,
`scribe reflect`, `scribe notes curate`), makes each decision once and undoes it in order.

    open_agent(Opening)  ->  the workspace, its trust, the config files (read once), settings,
                             prices, the model client, the MCP servers, the session (new or
                             continued), the agent (tools, permissions, watcher, compressor),
                             the context window learned from the server
    leaving the block    ->  agent (its watcher), session (checkpoint, lock), the curation in
                             the background, the MCP servers, in that order

Earlier sessions are curated into the project notes in the background (agent/housekeeping.py)
as a new session is prepared; a headless run starts its session with every earlier fact, a person
never waits for it (what it adds reaches the next session), and nobody waits for a curation as
scribe ends. The REPL switches sessions (`/clear`, `/resume`) inside one
opening: the servers and the client stay.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scribe.context.preview import OutputView
from scribe.context.tokens import TokenEstimator
from scribe.log.codec import to_record
from scribe.log.pricing import PriceBook
from scribe.log.store import SessionFile
from scribe.model.client import ModelClient
from scribe.model.window import PROBE_TIMEOUT_S, anthropic_url, read_props
from scribe.settings.files import (
    ConfigFiles,
    find_workspace,
    read_config,
    state_dir,
    trust_of,
    user_config_dir,
)
from scribe.settings.hooks import read_hooks
from scribe.settings.mcp_servers import mcp_config
from scribe.settings.prices import price_book
from scribe.settings.trust import WorkspaceTrust
from scribe.settings.values import HEADLESS_FOR_ASK, REPL_DEFAULTS, Settings, load_settings
from scribe.tools.base import Tool, ToolContext
from scribe.tools.mcp.hub import McpHub
from scribe.tools.registry import tool_definitions
from scribe.workspace.commitlock import COMMIT_LOCK
from scribe.workspace.gitrun import query_in
from scribe.workspace.sandbox import Protection
from scribe.workspace.watcher import WorkspaceWatcher

from . import abilities
from .autocommit import TurnCommitter
from .builtins import new_session_tools, session_builtins
from .compress import Compressor
from .driver import drive
from .housekeeping import BackgroundCuration, uncurated
from .lifecycle import greeting, skipped_note, switch_model
from .loop import Agent, Approver
from .mcptools import allowed_without_asking, open_hub, pinned_servers, pinning, session_tools
from .permissions import PermissionPolicy
from .protection import protection_for
from .protocol import Curated, LifeEvent
from .session import Session, open_session, start_session, store_for

if TYPE_CHECKING:
    from scribe.telemetry.export import Telemetry

Show = Callable[[LifeEvent], None]
ConfirmServers = Callable[[Path, Settings, ConfigFiles], None]
# The most a person waits for housekeeping as a session ends (the REPL gives a compression between
# turns this long to finish). A person does not wait for the curation of earlier sessions as a
# session starts: it needs the SDK, whose import alone takes about a second on a cold start, and
# a model's answer, so a wait there seldom brought the notes in and always put the prompt off.
PERSON_WAITS_S = 1.0


@dataclass(frozen=True)
class SessionChoice:
    """Which session to run in: a new one, the latest of the workspace, or a given id."""

    continue_latest: bool = False
    session_id: str | None = None
    # A model asked for by name (--model): a continued session switches to it.
    model: str | None = None

    @property
    def continues(self) -> bool:
        return self.continue_latest or self.session_id is not None


@dataclass(frozen=True)
class Opening:
    """What a front end asks for."""

    cwd: Path
    choice: SessionChoice = SessionChoice()
    # Settings given on the command line (None: not given).
    flags: Mapping[str, Any] = field(default_factory=dict)
    # The settings whole, instead of reading the files and environment (the demo; tests).
    settings: Settings | None = None
    trust_workspace: bool = False  # --trust-workspace: the workspace's own files apply this once
    # A person is there: the REPL's defaults (ask before edits), their Ctrl-C skips a wait.
    person: bool = False
    # The agent will run turns: it watches the workspace, starts MCP servers, learns the
    # server's window. `scribe reflect` and `scribe notes curate` do none of that.
    turns: bool = True
    # The configured MCP servers start (`scribe demo` runs without the person's servers).
    servers: bool = True


class Opened:
    """An open agent and what it was assembled from; the REPL may move it to another session."""

    def __init__(self, opening: Opening, workspace: Path, trust: WorkspaceTrust, config: ConfigFiles,
                 settings: Settings, prices: PriceBook, client: ModelClient, hub: McpHub | None,
                 telemetry: Telemetry | None = None, tell: Callable[[str], None] = lambda line: None) -> None:
        self.opening = opening
        self.workspace, self.trust, self.config = workspace, trust, config
        self.settings, self.prices, self.client = settings, prices, client
        # None: no MCP server is configured (nor was one started for this opening).
        self.hub = hub
        # None: telemetry is off, and its module is never loaded.
        self.telemetry = telemetry
        self.tell = tell
        # The hooks the config files that apply name (settings/hooks.py): every agent runs them.
        self.hooks = read_hooks(workspace, config)
        self.curation: BackgroundCuration | None = None
        # A person's first session: curated from when the front end calls `start_curation` (the
        # REPL, once its prompt is drawn: a thread started sooner takes the interpreter's lock
        # from the start-up).
        self._curate_later = opening.person
        self._agent: Agent | None = None

    @property
    def agent(self) -> Agent:
        assert self._agent is not None, "no session is open"
        return self._agent

    @property
    def session(self) -> Session:
        return self.agent.session

    @property
    def has_session(self) -> bool:
        return self._agent is not None

    # -- sessions ---------------------------------------------------------------------------

    def open(self, choice: SessionChoice, show: Show, approver: Approver | None = None) -> Agent:
        """End the current session, if any, then run in the session `choice` names, greeted."""
        self.end()
        # Worked out once for a new session, which records it and whose commands run under it.
        protection = protection_for(self.workspace, self.settings)
        session = self._continued(choice) if choice.continues else self._new(show, protection)
        try:
            agent = self._build(session, approver, protection, continued=choice.continues)
            if self.telemetry is not None:
                self.telemetry.follow(session, new=not choice.continues)
            show(greeting(session, agent.policy.mode, resumed=choice.continues))
        except BaseException:
            session.close()
            raise
        self._agent = agent
        return agent

    def adopt(self, session: Session, approver: Approver | None = None) -> Agent:
        """Run in a session the caller opened itself (a benchmark's or a test's own log), as a
        continued one; ending the current session first. Not greeted."""
        self.end()
        self._agent = self._build(session, approver, protection_for(self.workspace, self.settings), continued=True)
        if self.telemetry is not None:
            self.telemetry.follow(session, new=False)
        return self._agent

    def end(self) -> None:
        """The current session ends (nothing is curated now: the next new session curates it)."""
        agent, self._agent = self._agent, None
        if agent is not None:
            try:
                agent.close()  # stops its file watcher
            finally:
                agent.session.close()

    def set_mode(self, mode: str) -> None:
        """The permission mode, for this session and the next ones of this opening."""
        self.agent.policy.mode = mode
        self.settings = replace(self.settings, permission_mode=mode)

    def close(self) -> None:
        """The session ends, a curation still running curates no further session (the next start
        picks up the rest; nobody waits for it), the MCP servers stop, and telemetry's last export
        is waited on a moment at most (what went wrong with it is told)."""
        try:
            self.end()
        finally:
            try:
                if self.curation is not None:
                    self.curation.stop()
            finally:
                try:
                    if self.hub is not None:
                        self.hub.close()
                finally:
                    for line in self.telemetry.close() if self.telemetry is not None else ():
                        self.tell(line)

    def _continued(self, choice: SessionChoice) -> Session:
        store = store_for(self.workspace)
        skipped: list[SessionFile] = []
        if choice.session_id:
            found = store.find(choice.session_id, self.workspace)
        else:
            continuation = store.to_continue(self.workspace)
            found, skipped = continuation.found, continuation.skipped
        session = open_session(found)
        session.notices += [skipped_note(s) for s in skipped]
        if choice.model:
            switch_model(session, choice.model)
        return session

    def _new(self, show: Show, protection: Protection) -> Session:
        """A new session. Its MCP servers start and the earlier sessions are curated in the
        background meanwhile. A headless run waits for that curation, so its instructions take
        every earlier fact; a person does not (the session starts with the notes as they are, the
        curation goes on in the background, and what it adds reaches the next session). Then it
        waits for the servers at most `mcp_start_timeout_s` and pins what they offer."""
        if self.opening.turns and self.hub is not None:
            self.hub.start()
        if self.curation is None or not self.curation.running:
            self.curation = BackgroundCuration(self.workspace, self.settings, self.client,
                                               uncurated(self.workspace, self.settings))
            if not self._curate_later:
                self.curation.start()
        if not self.opening.person:  # the REPL says what the curation did at a later prompt
            self.curation.wait()
            for curated in self.curated():
                show(curated)
        mcp_definitions: list[dict[str, Any]] = []
        record: list[dict[str, Any]] = []
        if self.opening.turns and self.hub is not None and self.hub.specs:
            mcp_definitions, record = drive(pinning(self.hub, self.settings.mcp_start_timeout_s,
                                                    skippable=self.opening.person), show)
        return start_session(self.workspace, self.settings,
                             tool_definitions(new_session_tools(self.settings)) + mcp_definitions, record,
                             protection=protection.record())

    def _build(self, session: Session, approver: Approver | None, protection: Protection, *,
               continued: bool) -> Agent:
        settings = self.settings
        mcp_tools = session_tools(session.header, self._hub()) if session.header.mcp else []
        if self.opening.turns and continued and self.hub is not None:
            # In the background: a continued session waits for nothing. (A new one started them all.)
            self.hub.start(pinned_servers(session.header))
        tools: list[Tool] = [*session_builtins(session.header, settings), *mcp_tools]
        context = ToolContext(
            workspace=self.workspace,
            allowed_roots=tuple(Path(p).expanduser().resolve() for p in settings.allowed_paths),
            command_timeout_s=settings.command_timeout_s,
            output_cap_bytes=settings.output_cap_bytes,
            read_log=lambda: (to_record(e) for e in session.events),
            seen_hashes=dict(session.digest.seen),
            protection=protection,
            regex_timeout_s=settings.regex_timeout_s,
            scribe_folders=(state_dir(self.workspace), user_config_dir()),
            images=session.images.folder,
        )
        recorded = session.header.recorded
        estimator = TokenEstimator(OutputView.of(recorded), settled_chars=recorded.settled_output_chars)
        estimator.learn(session.digest.calibration)
        memory = Compressor(self.client, settings, estimator)
        if self.opening.turns:
            ask_window(session, settings, memory)
        # Watching starts with the first turn and stops with agent.close(), or when the agent
        # is garbage-collected.
        watcher = (WorkspaceWatcher(self.workspace, exclude=[state_dir(self.workspace)], git=query_in(self.workspace, context.protection))
                   if settings.watch_files and self.opening.turns else None)
        agent = Agent(
            session=session,
            model=self.client,
            tools=tools,
            context=context,
            policy=PermissionPolicy(settings.permission_mode,
                                    allowed=allowed_without_asking(mcp_tools, self._hub()) if mcp_tools else frozenset()),
            max_turns=settings.max_turns,
            approver=approver,
            memory=memory,
            watcher=watcher,
            committer=(TurnCommitter(self.workspace, context, lock=state_dir(self.workspace) / COMMIT_LOCK)
                       if settings.auto_commit else None),
        )
        agent.hooks = self.hooks
        if watcher is not None:
            weakref.finalize(agent, watcher.stop)
        return agent

    def _hub(self) -> McpHub:
        """The servers, or none: a session that pinned tools from servers no longer configured
        keeps them, and a call to one says its server is not there."""
        if self.hub is None:
            self.hub = McpHub([], self.workspace)
        return self.hub

    # -- what the background curation did, for the front end to say -------------------------

    def start_curation(self) -> None:
        """Start the curation a person's session left waiting for this call, and every later one
        at once."""
        self._curate_later = False
        if self.curation is not None:
            self.curation.start()

    def curated(self) -> list[Curated]:
        """What the background curation finished since last asked, as life events."""
        if self.curation is None:
            return []
        return [Curated(outcome.message, outcome.noteworthy) for outcome in self.curation.finished()]


@contextmanager
def open_agent(opening: Opening, *, show: Show = lambda event: None,
               ask_trust: Callable[[WorkspaceTrust], WorkspaceTrust] | None = None,
               approver: Approver | None = None, client: ModelClient | None = None,
               on_trust: Callable[[WorkspaceTrust], None] | None = None, hub: McpHub | None = None,
               open_session: bool = True, tell: Callable[[str], None] = lambda line: None,
               confirm_servers: ConfirmServers | None = None) -> Iterator[Opened]:
    """The agent `opening` asks for, in its session; everything undone in order on leaving.

    `ask_trust`: a person is asked whether an untrusted workspace's own files may apply (the
    REPL); `on_trust` is told the trust found (a headless run says what it ignored). `show`
    receives the session's life events (MCP servers waited for, the greeting). `client`: one
    made already (the demo's, whose retries are off); `hub` likewise. `open_session` False: the
    front end opens the session itself, with `Opened.open` (the REPL, once its keys and screen are
    set up). `tell`: a line for the person from the teardown (telemetry that could not export).
    `confirm_servers`: a person is asked about the workspace's MCP servers whose files changed
    since they confirmed them, before any starts (the REPL)."""
    opened = assemble(opening, ask_trust=ask_trust, on_trust=on_trust, client=client, hub=hub, tell=tell,
                      confirm_servers=confirm_servers)
    try:
        if open_session:
            opened.open(opening.choice, show, approver)
        yield opened
    finally:
        opened.close()


def assemble(opening: Opening, *, ask_trust: Callable[[WorkspaceTrust], WorkspaceTrust] | None = None,
             on_trust: Callable[[WorkspaceTrust], None] | None = None,
             client: ModelClient | None = None, hub: McpHub | None = None,
             tell: Callable[[str], None] = lambda line: None, confirm_servers: ConfirmServers | None = None) -> Opened:
    """Everything but the session: the workspace, trust, config files, settings, prices, the
    model client and the MCP servers (none started yet)."""
    workspace = find_workspace(opening.cwd)
    trust = trust_of(workspace, granted=opening.trust_workspace)
    if not trust.trusted and ask_trust is not None:
        trust = ask_trust(trust)
    if on_trust is not None:
        on_trust(trust)
    config = read_config(workspace, trust)
    settings = opening.settings or _settings(workspace, opening, config)
    client = client or ModelClient.for_settings(settings)
    if confirm_servers is not None and opening.turns and opening.servers:
        confirm_servers(workspace, settings, config)
    if hub is None and opening.turns and opening.servers:
        servers = mcp_config(workspace, settings, config=config)
        # None configured: no hub, and nothing of MCP is on the run's way.
        hub = open_hub(workspace, settings, found=servers) if servers.servers else None
    prices = price_book(config)
    telemetry = None
    if opening.turns and settings.enable_telemetry:  # off: its module is not even loaded
        from scribe.telemetry.export import open_telemetry
        telemetry = open_telemetry(settings, prices.price_usage)
    return Opened(opening, workspace, trust, config, settings, prices, client, hub, telemetry, tell)


def _settings(workspace: Path, opening: Opening, config: ConfigFiles) -> Settings:
    if opening.person:
        return load_settings(workspace, opening.flags, defaults=REPL_DEFAULTS, config=config)
    settings = load_settings(workspace, opening.flags, config=config)
    # Headless: nobody can answer a question, so `ask` from the files means accept-edits.
    if settings.permission_mode == "ask":
        return replace(settings, permission_mode=HEADLESS_FOR_ASK)
    return settings


def ask_window(session: Session, settings: Settings, memory: Compressor) -> None:
    """Ask a server that is not Anthropic's for its context window and whether its model takes
    tools, once as an agent opens (a short wait at most: model/window.read_props), and record
    what is news (the window only when the config does not give it; agent/abilities.py)."""
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    report = None if anthropic_url(base_url) else read_props(str(base_url), min(PROBE_TIMEOUT_S,
                                                                                   settings.request_timeout_s))
    if report is not None and report.window is not None and not settings.context_tokens:
        memory.learn_window(session, report.window, "server")
    abilities.at_start(session, report)
