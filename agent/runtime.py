"""Assembling an agent for a workspace: settings, session (new or continued), tools, client."""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Generator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from scribe.context.render import current_model
from scribe.context.tokens import TokenEstimator, estimate_text
from scribe.log.codec import to_record
from scribe.log.events import ContextWindowEvent, ModelSwitchEvent
from scribe.log.jsonl import read_log
from scribe.log.store import SessionFile, SessionNotFound
from scribe.model.client import ModelClient
from scribe.model.window import (
    PROBE_TIMEOUT_S,
    ContextWindow,
    Limits,
    anthropic_url,
    ask_server,
    effective_window,
    limits,
)
from scribe.settings.files import state_dir, user_config_dir
from scribe.settings.values import Settings
from scribe.tools.base import Tool, ToolContext
from scribe.tools.mcp.hub import McpHub
from scribe.tools.registry import builtin_tools, tool_definitions
from scribe.workspace.commitlock import COMMIT_LOCK
from scribe.workspace.gitrun import query_in
from scribe.workspace.watcher import WorkspaceWatcher

from .autocommit import TurnCommitter
from .compress import Compressor
from .driver import drive
from .instructions import Environment, read_project_texts, system_text
from .lifecycle import curating_earlier, greeting
from .loop import Agent, Approver
from .mcptools import allowed_without_asking, pinned_servers, pinning, session_tools
from .permissions import PermissionPolicy
from .protection import protection_for
from .protocol import LifeEvent
from .session import Session, notes_path, open_session, start_session, store_for


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


def choose(workspace: Path, settings: Settings, choice: SessionChoice, hub: McpHub | None = None, *,
           model: ModelClient | None = None, skippable: bool = False) -> Generator[LifeEvent, None, Session]:
    """The session to run in. A continued one keeps the tools it pinned. A new one starts with
    the project notes; with `model`, the earlier sessions of the workspace that the notes have
    not taken are curated into them first, while its MCP servers start, so the new session's
    instructions hold every earlier fact. Then it waits for the servers at most
    `mcp_start_timeout_s` and pins what they offer by then (agent/mcptools.py). `skippable`: a
    person is there, whose Ctrl-C skips those waits (agent/lifecycle.py)."""
    store = store_for(workspace)
    if choice.session_id or choice.continue_latest:
        skipped: list[SessionFile] = []
        if choice.session_id:
            found = store.find(choice.session_id, workspace)
        else:
            continuation = store.to_continue(workspace)
            found, skipped = continuation.found, continuation.skipped
        session = open_session(found)
        session.notices += [skipped_note(s) for s in skipped]
        if choice.model:
            switch_model(session, choice.model)
        return session
    if hub is not None:
        hub.start()  # they start while earlier sessions are curated
    if model is not None:
        yield from curating_earlier(workspace, settings, model, skippable=skippable)
    mcp_definitions: list[dict] = []
    record: list[dict] = []
    if hub is not None and hub.specs:
        mcp_definitions, record = yield from pinning(hub, settings.mcp_start_timeout_s, skippable=skippable)
    return start_session(workspace, settings, tool_definitions(builtin_tools()) + mcp_definitions, record,
                         protection=protection_for(workspace, settings).record())


def choose_session(workspace: Path, settings: Settings, choice: SessionChoice, hub: McpHub | None = None, *,
                   model: ModelClient | None = None) -> Session:
    """`choose`, with nothing shown."""
    return drive(choose(workspace, settings, choice, hub, model=model), lambda event: None)


def begin(workspace: Path, settings: Settings, session: Session, *, resumed: bool, approver: Approver | None = None,
          model: ModelClient | None = None, hub: McpHub | None = None) -> Generator[LifeEvent, None, Agent]:
    """The agent for `session` (see `build_agent`), greeted. Should the greeting be cut short,
    the agent is released; the session is the caller's to close."""
    agent = build_agent(workspace, settings, session, approver=approver, model=model, hub=hub)
    try:
        yield greeting(session, agent.policy.mode, resumed=resumed)
    except BaseException:
        agent.close()
        raise
    return agent


def start(workspace: Path, settings: Settings, choice: SessionChoice, hub: McpHub, *,
          model: ModelClient) -> Generator[LifeEvent, None, Agent]:
    """A headless run's start: its session chosen (`choose`), the agent for it, greeted. Should it
    fail after the session is open, the session is closed."""
    session = yield from choose(workspace, settings, choice, hub, model=model)
    try:
        return (yield from begin(workspace, settings, session, resumed=choice.continues, model=model, hub=hub))
    except BaseException:
        session.close()
        raise


def skipped_note(session: SessionFile) -> str:
    return (f"skipped session {session.id}, written after this one: {session.damaged}; "
            f"`scribe log verify {session.id}` says more")


def switch_model(session: Session, model: str) -> bool:
    """Make `model` the session's model from its next call on; False if it already is."""
    if current_model(session.events, session.chunks) == model:
        return False
    session.append(ModelSwitchEvent, model=model)
    return True


def window_here(workspace: Path, settings: Settings) -> tuple[ContextWindow | None, Limits]:
    """The window a new session of this workspace would start with, and the thresholds it sets
    (`scribe config`): from the config, the server's report (asked now) or the table."""
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    reported = None
    if not settings.context_tokens and not anthropic_url(base_url):
        assert base_url is not None
        tokens = ask_server(base_url, min(PROBE_TIMEOUT_S, settings.request_timeout_s))
        reported = ContextWindow(tokens, "server") if tokens is not None else None
    window = effective_window(settings.model, settings.context_tokens, reported)
    system = system_text(Environment(str(workspace), None, None, date.today()),
                         read_project_texts(workspace, notes_path(workspace)).texts)
    fixed = estimate_text(system) + estimate_text(json.dumps(tool_definitions(builtin_tools()), ensure_ascii=False))
    return window, limits(window, observe=settings.observe_tokens, reflect=settings.reflect_tokens,
                          side_call=settings.side_call_tokens, max_tokens=settings.max_tokens, fixed=fixed)


def learned_window(workspace: Path) -> tuple[str, ContextWindow] | None:
    """The window the workspace's latest session learned (from its server or a refusal), with
    the session's id; None when it learned none (`scribe config`)."""
    try:
        found = store_for(workspace).latest(workspace)
    except SessionNotFound:
        return None
    learned = [e for e in read_log(found.path).events if isinstance(e, ContextWindowEvent)]
    return (found.id, ContextWindow(learned[-1].tokens, learned[-1].source)) if learned else None


def ask_window(session: Session, settings: Settings, memory: Compressor) -> None:
    """Ask a server that is not Anthropic's for its context window, once per session start (a
    short wait at most: agent/window.ask_server), and record it when it is news. Not asked when
    the config gives the window."""
    base_url = os.environ.get("ANTHROPIC_BASE_URL")
    if settings.context_tokens or anthropic_url(base_url):
        return
    assert base_url is not None  # anthropic_url is true without one
    tokens = ask_server(base_url, min(PROBE_TIMEOUT_S, settings.request_timeout_s))
    if tokens is not None:
        memory.learn_window(session, tokens, "server")


def build_agent(workspace: Path, settings: Settings, session: Session, *,
                approver: Approver | None = None, model: ModelClient | None = None,
                hub: McpHub | None = None) -> Agent:
    """`hub`: the process's MCP servers; the session's pinned MCP tools call through it (without
    one, or when a server is no longer configured, a call says so in its error result)."""
    hub = hub if hub is not None else McpHub([], workspace)
    mcp_tools = session_tools(session.header, hub)
    hub.start(pinned_servers(session.header))  # in the background: a continued session waits for nothing
    tools: list[Tool] = [*builtin_tools(), *mcp_tools]
    context = ToolContext(
        workspace=workspace,
        allowed_roots=tuple(Path(p).expanduser().resolve() for p in settings.allowed_paths),
        command_timeout_s=settings.command_timeout_s,
        output_cap_bytes=settings.output_cap_bytes,
        read_log=lambda: (to_record(e) for e in session.events),
        seen_hashes=dict(session.digest.seen),
        protection=protection_for(workspace, settings),
        regex_timeout_s=settings.regex_timeout_s,
        scribe_folders=(state_dir(workspace), user_config_dir()),
    )
    client = model or ModelClient.for_settings(settings)
    output_chars = int(session.header.config.get("render_output_chars", settings.render_output_chars))
    settled_chars = int(session.header.config.get("settled_output_chars", output_chars))  # as render reads it
    # Watching starts with the first turn (`scribe reflect` never pays for it) and stops with
    # agent.close(), or when the agent is garbage-collected.
    watcher = (WorkspaceWatcher(workspace, exclude=[state_dir(workspace)], git=query_in(workspace, context.protection))
               if settings.watch_files else None)
    memory = Compressor(client, settings, TokenEstimator(output_chars=output_chars, settled_chars=settled_chars))
    ask_window(session, settings, memory)
    agent = Agent(
        session=session,
        model=client,
        tools=tools,
        context=context,
        policy=PermissionPolicy(settings.permission_mode, allowed=allowed_without_asking(mcp_tools, hub)),
        max_turns=settings.max_turns,
        approver=approver,
        memory=memory,
        watcher=watcher,
        committer=(TurnCommitter(workspace, context, lock=state_dir(workspace) / COMMIT_LOCK)
                   if settings.auto_commit else None),
    )
    if watcher is not None:
        weakref.finalize(agent, watcher.stop)
    return agent
