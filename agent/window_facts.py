"""What `scribe config` shows of a workspace's context window: the window a new session would
start with (from the config, the server's report or the table) and the thresholds it sets, and
the window its latest session learned. An agent asks its server once as it opens
(agent/assembly.ask_window)."""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

from scribe.agent.builtins import new_session_tools
from scribe.agent.session.instructions import Environment, read_project_texts, system_text
from scribe.agent.session.session import notes_path, store_for
from scribe.context.tokens import estimate_text
from scribe.log.events import ContextWindowEvent
from scribe.log.jsonl import read_log
from scribe.log.store import SessionNotFound
from scribe.model.window import (
    PROBE_TIMEOUT_S,
    ContextWindow,
    Limits,
    anthropic_url,
    ask_server,
    effective_window,
    limits,
)
from scribe.settings.values import Settings
from scribe.tools.registry import tool_definitions


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
    fixed = estimate_text(system) + estimate_text(json.dumps(tool_definitions(new_session_tools(settings)),
                                                             ensure_ascii=False))
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
