"""A session's life around its turns, as events a front end shows (agent/protocol.py, run through
agent/driver.py): the greeting once a front end runs in a session (with a note of each later
session a continuation skipped) and a switch of model. Which session to run in, and the agent for
it, are agent/opening.py's; curation is agent/curation/'s; the MCP servers' start is
agent/mcptools.py's."""

from __future__ import annotations

from pathlib import Path

from scribe.agent.mcptools import start_notes
from scribe.agent.protocol import SessionOpened
from scribe.agent.session.session import Session
from scribe.context.render import current_model
from scribe.log.events import ModelSwitchEvent
from scribe.log.store import SessionFile
from scribe.settings.values import PermissionMode


def greeting(session: Session, mode: PermissionMode, *, resumed: bool) -> SessionOpened:
    """What opening `session` says; the MCP servers a session has no tools from are said once,
    as it starts."""
    header = session.header
    return SessionOpened(session.id, session.path, Path(header.cwd), current_model(session.events, session.chunks),
                         mode, resumed,
                         tuple(session.problems), tuple(session.notices),
                         () if resumed or not header.mcp else tuple(start_notes(header)),
                         tools=tuple(str(t.get("name", "")) for t in header.tools))


def skipped_note(session: SessionFile) -> str:
    return (f"skipped session {session.id}, written after this one: {session.damaged}; "
            f"`scribe log verify {session.id}` says more")


def switch_model(session: Session, model: str) -> bool:
    """Make `model` the session's model from its next call on; False if it already is."""
    if current_model(session.events, session.chunks) == model:
        return False
    session.append(ModelSwitchEvent, model=model)
    return True
