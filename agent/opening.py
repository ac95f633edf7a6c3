"""Opening an agent: one place, for every front end and for sub-agents, makes each decision once
and undoes it in order. The core (agent/core.py) runs it; what needs an answer is a question it
yields (TrustRequested, ServersToConfirm), answered by the submission the front end sends back.

    assemble(config)  ->  the workspace, its trust, the config files (read once), settings,
                          prices, the model client, the MCP servers, the hooks, telemetry
    Opened.open(choice) -> the session (new or continued) and its turn loop (tools, permissions,
                          watcher, compressor, hooks), the context window learned from the server
    Opened.close()    ->  the loop (its watcher), the session (checkpoint, lock, what it leaves
                          to do after it: `left`), the curation in the background, the MCP
                          servers, in that order

For a person, earlier sessions are curated into the project notes in the background
(agent/curation/) as a new session is prepared; they never wait for it (what it adds reaches the
next session). What a session of `scribe run` or the REPL ends with still to do is handed on to
be done after it (agent/finishing/). The REPL switches sessions (`/clear`, `/resume`) inside one
opening: the servers and client stay.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scribe.agent.actions.autocommit import TurnCommitter
from scribe.agent.builtins import new_session_tools, session_builtins
from scribe.agent.compression.compressor import Compressor
from scribe.agent.config import AgentConfig, ChildOf, SessionChoice
from scribe.agent.curation.background import BackgroundCuration, uncurated
from scribe.agent.finishing.handover import Handover, take_back
from scribe.agent.lifecycle import greeting, skipped_note, switch_model
from scribe.agent.loop import TurnLoop
from scribe.agent.mcptools import allowed_without_asking, open_hub, pinned_servers, pinning, session_tools
from scribe.agent.permissions import PermissionPolicy
from scribe.agent.protocol import (
    Curated,
    LifeEvent,
    ServersAnswer,
    ServersToConfirm,
    TrustAnswer,
    TrustRequested,
)
from scribe.agent.session import abilities
from scribe.agent.session.instructions import subagent_guidance
from scribe.agent.session.session import Session, store_for
from scribe.agent.session.start import open_session, start_session
from scribe.agent.task import TASK, ChildFactory, Subagents
from scribe.context.preview import OutputView
from scribe.context.tokens import TokenEstimator
from scribe.log.codec import to_record
from scribe.log.events import ModeEvent
from scribe.log.jsonl import LogError, SessionLocked, read_first_record, read_log
from scribe.log.pricing import PriceBook
from scribe.log.seal import authenticate_file
from scribe.log.store import SessionFile
from scribe.memory.notes import teaches
from scribe.model.client import ModelClient
from scribe.model.events import Notice
from scribe.model.window import PROBE_TIMEOUT_S, anthropic_url, read_props
from scribe.settings.agents import AgentSet, load_agents
from scribe.settings.files import (
    ConfigFiles,
    find_workspace,
    read_config,
    state_dir,
    trust_of,
    trust_store,
    user_config_dir,
)
from scribe.settings.hooks import read_hooks
from scribe.settings.mcp_servers import mcp_config
from scribe.settings.prices import price_book
from scribe.settings.protection import protection_for
from scribe.settings.rules import Rule, read_rules
from scribe.settings.server_pins import pins_to_trust, workspace_servers
from scribe.settings.trust import WorkspaceTrust
from scribe.settings.untrusted import ignored_line, question
from scribe.settings.values import HEADLESS_FOR_ASK, REPL_DEFAULTS, PermissionMode, Settings, load_settings
from scribe.tools.base import Tool, ToolContext
from scribe.tools.mcp.hub import McpHub
from scribe.tools.registry import tool_definitions
from scribe.workspace.git.commitlock import COMMIT_LOCK
from scribe.workspace.git.repository import query_in
from scribe.workspace.sandbox.protection import Protection
from scribe.workspace.watcher.watcher import WorkspaceWatcher

if TYPE_CHECKING:
    from scribe.telemetry.export import Telemetry

# The most a person waits for housekeeping as a session ends (the REPL gives a compression between
# turns this long to finish).
PERSON_WAITS_S = 1.0


class Opened:
    """An open agent and what it was assembled from; the REPL may move it to another session."""

    def __init__(self, config: AgentConfig, workspace: Path, trust: WorkspaceTrust, files: ConfigFiles,
                 settings: Settings, prices: PriceBook, client: ModelClient, hub: McpHub | None,
                 telemetry: Telemetry | None = None, cancelled: threading.Event | None = None,
                 children: ChildFactory | None = None) -> None:
        self.config = config
        self.workspace, self.trust, self.files = workspace, trust, files
        # The permission rules of the config files that apply and of the command line; a rule the
        # person saves at a question joins them, for this opening's later sessions too.
        self.rules: list[Rule] = [*read_rules(files), *config.rules]
        self.settings, self.prices, self.client = settings, prices, client
        # None: no MCP server is configured (nor was one started for this opening).
        self.hub = hub
        # None: telemetry is off, and its module is never loaded.
        self.telemetry = telemetry
        # The hooks the config files that apply name (settings/hooks.py): every loop runs them.
        self.hooks = read_hooks(workspace, files)
        # The kinds of sub-agent new sessions' task tool offers, read with the rest of the config
        # (a sub-agent's own session offers none).
        self.agents = (load_agents(trust) if settings.task_tool and config.turns and config.child is None
                       else AgentSet())
        self.curation: BackgroundCuration | None = None
        # A person's first session: curated from when the front end calls `start_curation` (the
        # REPL, once its prompt is drawn: a thread started sooner takes the interpreter's lock
        # from the start-up).
        self._curate_later = config.person
        self._loop: TurnLoop | None = None
        # Where the current session stood when it was opened (its events then), and whether it was
        # taken back from a finisher still at it: what it ends with still to do is worked out from
        # these (`end`).
        self._opened_with = 0
        self._taken_back = False
        # What the sessions this opening ended left to do, for the front end to hand on
        # (agent/finishing/); only where `config.finish_after`.
        self.left: list[Handover] = []
        # Set by the core when what runs is to stop (agent/core.py): shared by every wait of every
        # session this opening runs.
        self.cancelled = cancelled or threading.Event()
        # Opens the sub-agents of the task tool (the agent core's class); None: no sub-agents.
        self.children = children

    @property
    def loop(self) -> TurnLoop:
        assert self._loop is not None, "no session is open"
        return self._loop

    @property
    def session(self) -> Session:
        return self.loop.session

    @property
    def has_session(self) -> bool:
        return self._loop is not None

    # -- sessions ---------------------------------------------------------------------------

    def open(self, choice: SessionChoice) -> Generator[LifeEvent | Notice, Any, TurnLoop]:
        """End the current session, if any, then run in the session `choice` names, greeted."""
        self.end()
        # Worked out once for a new session, which records it and whose commands run under it.
        protection = protection_for(self.workspace, self.settings)
        session = self._continued(choice) if choice.continues else (yield from self._new(protection))
        try:
            loop = self._build(session, protection, continued=choice.continues)
            if self.telemetry is not None:
                self.telemetry.follow(session, new=not choice.continues)
        except BaseException:
            session.close()
            raise
        self._loop = loop
        self._opened_with = len(session.events)
        mode = loop.policy.mode
        if mode == PermissionMode.PLAN and recorded_mode(session) != mode:
            # Planning from the start: the model is told, as it is when the mode changes later.
            session.append(ModeEvent, mode=str(mode), previous=str(recorded_mode(session)))
            session.sync()
        yield greeting(session, mode, resumed=choice.continues)
        return loop

    def adopt(self, session: Session) -> TurnLoop:
        """Run in a session the caller opened itself (a benchmark's or a test's own log), as a
        continued one; ending the current session first. Not greeted."""
        self.end()
        self._loop = self._build(session, protection_for(self.workspace, self.settings), continued=True)
        if self.telemetry is not None:
            self.telemetry.follow(session, new=False)
        return self._loop

    def end(self) -> None:
        """The current session ends; what it leaves to do is kept in `left` (where the front end
        hands it on)."""
        loop, self._loop = self._loop, None
        if loop is not None:
            try:
                loop.close()  # stops its file watcher
                if self.config.finish_after and self.config.child is None:
                    self._leave(loop)
            finally:
                loop.session.close()

    def _leave(self, loop: TurnLoop) -> None:
        """Keep what the session ends with still to do: its memory compressed as between turns,
        and the notes curated from it when what it said since it was opened teaches something
        (or a finisher was stopped to open it, and may have left a curation)."""
        session, memory = loop.session, loop.memory
        compress = memory is not None and memory.due(session, ahead=True)
        taught = any(teaches(event) for event in session.events[self._opened_with:])
        curate = self.settings.curate_notes and (taught or self._taken_back)
        if compress or curate:
            self.left.append(Handover(self.workspace, session.id, self.settings.recorded(), compress, curate))

    def set_mode(self, mode: PermissionMode) -> None:
        """The permission mode, for this session and the next ones of this opening; the change is
        in the log (entering and leaving plan mode are said to the model: context/render.py)."""
        previous = self.loop.policy.mode
        self.loop.policy.mode = mode
        self.settings = replace(self.settings, permission_mode=mode)
        if mode != previous:
            self.session.append(ModeEvent, mode=str(mode), previous=str(previous))
            self.session.sync()

    def switch_model(self, model: str) -> bool:
        """This session's model from its next call on, and the model of the next sessions of this
        opening; False when the session was on it already."""
        self.settings = replace(self.settings, model=model)
        changed = switch_model(self.session, model)
        if changed:
            self.session.sync()
        return changed

    def close(self) -> list[str]:
        """The session ends, a curation still running curates no further session (the next start
        picks up the rest; nobody waits for it), the MCP servers stop, and telemetry's last export
        is waited on a moment at most. What went wrong with that export, as lines to tell."""
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
                    lines = list(self.telemetry.close()) if self.telemetry is not None else []
        return lines

    def _continued(self, choice: SessionChoice) -> Session:
        store = store_for(self.workspace)
        skipped: list[SessionFile] = []
        if choice.session_id:
            found = store.find(choice.session_id, self.workspace)
        else:
            continuation = store.to_continue(self.workspace)
            found, skipped = continuation.found, continuation.skipped
        self._taken_back = False
        try:
            session = open_session(found)
        except SessionLocked:
            # A finisher still compressing or curating it after an earlier run gives way to the
            # person's next one: what it was doing is done again after this run.
            if not (self.config.finish_after and take_back(found.path)):
                raise
            session = open_session(found)
            self._taken_back = True
        session.notices += [skipped_note(s) for s in skipped]
        if choice.model:
            switch_model(session, choice.model)
        return session

    def _new(self, protection: Protection) -> Generator[LifeEvent | Notice, Any, Session]:
        """A new session. Its MCP servers start and, for a person, the earlier sessions are
        curated in the background meanwhile (the session starts with the notes as they are, and
        what the curation adds reaches the next session; a headless run's sessions are curated
        after it ends). Then it waits for the servers at most `mcp_start_timeout_s` and pins what
        they offer. A sub-agent's session does none of that: its tools are the ones its parent
        gave it."""
        config = self.config
        if config.child is not None:
            return self._new_child(config.child, protection)
        if config.turns and self.hub is not None:
            self.hub.start()
        if config.person and (self.curation is None or not self.curation.running):
            # The REPL says what it did at a later prompt. A headless run curates nothing on its
            # way: what its sessions teach is curated after them (agent/finishing/).
            self.curation = BackgroundCuration(self.workspace, self.settings, self.client,
                                               uncurated(self.workspace, self.settings))
            if not self._curate_later:
                self.curation.start()
        mcp_definitions: list[dict[str, Any]] = []
        record: list[dict[str, Any]] = []
        if config.turns and self.hub is not None and self.hub.specs:
            mcp_definitions, record = yield from pinning(self.hub, self.settings.mcp_start_timeout_s,
                                                         skippable=config.person)
        agents = self.agents if self.settings.task_tool else AgentSet()
        for line in agents.notes:
            yield Notice(line)
        return start_session(self.workspace, self.settings,
                             tool_definitions(new_session_tools(self.settings, list(agents.agents.values())))
                             + mcp_definitions, record, protection=protection.record(),
                             agents=[agent.record() for agent in agents.agents.values()])

    def _new_child(self, child: ChildOf, protection: Protection) -> Session:
        tools = [t for t in new_session_tools(self.settings) if t.name in child.tools]
        return start_session(self.workspace, self.settings, tool_definitions(tools), protection=protection.record(),
                             parent={"session": child.session, "tool_use_id": child.tool_use_id,
                                     "agent": child.agent.name},
                             guidance=subagent_guidance(child.agent.prompt))

    def _build(self, session: Session, protection: Protection, *, continued: bool) -> TurnLoop:
        settings, config = self.settings, self.config
        mcp_tools = session_tools(session.header, self._hub()) if session.header.mcp else []
        if config.turns and continued and self.hub is not None:
            # In the background: a continued session waits for nothing. (A new one started them all.)
            self.hub.start(pinned_servers(session.header))
        tools: list[Tool] = [*session_builtins(session.header, settings), *mcp_tools]
        context = ToolContext(
            workspace=self.workspace,
            allowed_roots=tuple(Path(p).expanduser().resolve() for p in settings.allowed_paths),
            command_timeout_s=settings.command_timeout_s,
            output_cap_bytes=settings.output_cap_bytes,
            read_log=lambda: (to_record(e) for e in session.events),
            read_child_log=lambda child: child_log(self.workspace, session.id, child),
            seen_hashes=dict(session.digest.seen),
            protection=protection,
            regex_timeout_s=settings.regex_timeout_s,
            scribe_folders=(state_dir(self.workspace), user_config_dir()),
            images=session.images.folder,
            cancelled=self.cancelled,
        )
        recorded = session.header.recorded
        estimator = TokenEstimator(OutputView.of(recorded), settled_chars=recorded.settled_output_chars)
        estimator.learn(session.digest.calibration)
        memory = Compressor(self.client, settings, estimator, cancelled=self.cancelled)
        if config.turns:
            ask_window(session, settings, memory)
        # Watching starts with the first turn and stops with loop.close(), or when the loop is
        # garbage-collected.
        watcher = (WorkspaceWatcher(self.workspace, exclude=[state_dir(self.workspace)],
                                    git=query_in(self.workspace, context.protection))
                   if settings.watch_files and config.turns else None)
        loop = TurnLoop(
            session=session,
            model=self.client,
            tools=tools,
            context=context,
            policy=PermissionPolicy(settings.permission_mode,
                                    allowed=allowed_without_asking(mcp_tools, self._hub()) if mcp_tools else frozenset(),
                                    rules=self.rules, workspace=self.workspace),
            max_turns=settings.max_turns,
            asks=config.answers,
            memory=memory,
            watcher=watcher,
            committer=(TurnCommitter(self.workspace, context, lock=state_dir(self.workspace) / COMMIT_LOCK)
                       if settings.auto_commit else None),
            hooks=self.hooks,
            cancelled=self.cancelled,
            subagents=(Subagents(self.children, self.workspace, settings, trust_workspace=config.trust_workspace,
                                 cancelled=self.cancelled)
                       if self.children is not None and any(t.name == TASK for t in tools) else None),
            # A person waits on each call: compression the window does not need goes on beside it.
            compress_off_path=config.person and settings.observe_ahead != "never",
            compress_after=config.finish_after and not config.person,
        )
        if watcher is not None:
            weakref.finalize(loop, watcher.stop)
        return loop

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


def assemble(config: AgentConfig, *, hub: McpHub | None = None, cancelled: threading.Event | None = None,
             children: ChildFactory | None = None) -> Generator[LifeEvent | Notice, Any, Opened]:
    """Everything but the session: the workspace, trust, config files, settings, prices, the
    model client and the MCP servers (none started yet). A person is asked whether an untrusted
    workspace's own files may apply, and about each of its servers that would run outside the
    sandbox on files changed since they were confirmed; anyone else is told in one line what was
    ignored. `hub`: one made already (tests)."""
    flags = config.overrides.flags()
    workspace = find_workspace(config.cwd)
    trust = trust_of(workspace, granted=config.trust_workspace)
    if not trust.trusted and config.person and trust.ignored:
        answer = yield TrustRequested(workspace, tuple(question(trust)))
        if isinstance(answer, TrustAnswer) and answer.trusted:
            trust_store().grant(workspace, trust.fingerprint, pins_to_trust(workspace, trust)[0])
            trust = trust_of(workspace)  # changed while the question was open: not what the person saw
    if trust.ignored and not trust.trusted:
        yield Notice(ignored_line(trust))
    files = read_config(workspace, trust)
    settings = config.settings or _settings(workspace, config, files, flags)
    client = ModelClient.for_settings(settings)
    if config.person and config.turns and config.servers:
        yield from _confirm_servers(workspace, settings, files)
    if hub is None and config.turns and config.servers:
        servers = mcp_config(workspace, settings, config=files)
        # None configured: no hub, and nothing of MCP is on the run's way.
        hub = open_hub(workspace, settings, found=servers) if servers.servers else None
    prices = price_book(files)
    telemetry = None
    if config.turns and settings.enable_telemetry:  # off: its module is not even loaded
        from scribe.telemetry.export import open_telemetry
        telemetry = open_telemetry(settings, prices.price_usage)
    return Opened(config, workspace, trust, files, settings, prices, client, hub, telemetry, cancelled, children)


def _confirm_servers(workspace: Path, settings: Settings, files: ConfigFiles) -> Generator[LifeEvent, Any, None]:
    """Before the servers start: each server of the trusted workspace that would run outside the
    sandbox on files changed since the person confirmed them is asked about; a yes records its
    files as they are now. Unasked, or answered otherwise, it does not start (and says so as the
    session opens)."""
    if not files.trust.trusted or files.trust.for_this_run:
        return
    changed = [s for s in workspace_servers(workspace, settings, files) if s.changed is not None]
    if changed and any(s.spec.wants_sandbox for s in changed) and protection_for(workspace, settings).sandboxed:
        changed = [s for s in changed if not s.spec.wants_sandbox]
    for server in changed:
        spec = server.spec
        answer = yield ServersToConfirm(spec.name, f"MCP server '{spec.name}' of this workspace runs outside the "
                                                   f"sandbox, with your environment (`{spec.where()}`): "
                                                   f"{server.changed}.")
        if isinstance(answer, ServersAnswer) and answer.name == spec.name and answer.confirmed:
            trust_store().confirm(workspace, spec.name, server.pin.as_dict())


def _settings(workspace: Path, config: AgentConfig, files: ConfigFiles, flags: Mapping[str, Any]) -> Settings:
    if config.person:
        return load_settings(workspace, flags, defaults=REPL_DEFAULTS, config=files)
    settings = load_settings(workspace, flags, config=files)
    # Nobody answers a question: `ask` from the files means accept-edits.
    if settings.permission_mode == PermissionMode.ASK and not config.answers:
        return replace(settings, permission_mode=HEADLESS_FOR_ASK)
    return settings


def child_log(workspace: Path, parent: str, child: str) -> Callable[[], Iterable[dict[str, Any]]] | None:
    """A sub-agent's log to read (recall's `session`), when `child` names one of `parent`'s:
    its first line names `parent` as the session that started it, and its seal holds."""
    try:
        found = store_for(workspace).find(child, workspace)
    except LogError:
        return None
    header = read_first_record(found.path) or {}
    named = header.get("parent")
    if not isinstance(named, dict) or named.get("session") != parent or not authenticate_file(found.path).ok:
        return None
    return lambda: (to_record(event) for event in read_log(found.path).events)


def recorded_mode(session: Session) -> str:
    """The permission mode the log last recorded: its last mode event, else its start's."""
    last = next((e for e in reversed(session.events) if isinstance(e, ModeEvent)), None)
    return last.mode if last is not None else str(session.header.config.get("permission_mode", ""))


def ask_window(session: Session, settings: Settings, memory: Compressor) -> None:
    """Ask a server that is not Anthropic's for its context window and whether its model takes
    tools, once as an agent opens (a short wait at most: model/window.read_props), and record
    what is news (the window only when the config does not give it; agent/session/abilities.py)."""
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    report = None if anthropic_url(base_url) else read_props(str(base_url), min(PROBE_TIMEOUT_S,
                                                                                   settings.request_timeout_s))
    if report is not None and report.window is not None and not settings.context_tokens:
        memory.learn_window(session, report.window, "server")
    abilities.at_start(session, report)
