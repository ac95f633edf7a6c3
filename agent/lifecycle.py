"""A session's life around its turns, as events a front end shows (agent/protocol.py, run through
agent/driver.py): the greeting once a front end runs in a session (with a note of each later
session a continuation skipped), a switch of model, and a curation the person asked for
(`/notes curate`). Which session to run in, and the agent for it, are
agent/opening.py's; the curation nobody asked for runs in the background
(agent/curation/background.py); the MCP servers' start is agent/mcptools.py's.

`skippable`: a person is there, and a Ctrl-C skips a wait. Without one (a headless run) a
KeyboardInterrupt is a signal that ends scribe, and it goes on up."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

from scribe.agent.curation.curator import curate
from scribe.agent.mcptools import start_notes
from scribe.agent.protocol import Curated, CurationEnded, CurationStarted, LifeEvent, SessionOpened
from scribe.agent.session.session import Session
from scribe.context.render import current_model
from scribe.log.events import ModelSwitchEvent
from scribe.log.store import SessionFile
from scribe.model.client import ModelClient
from scribe.settings.values import PermissionMode, Settings


def curating(session: Session, model: ModelClient, settings: Settings, notes: Path, *,
             skippable: bool = False) -> Generator[LifeEvent, None, None]:
    """What `session` taught merged into the project notes at `notes` now (agent/curation/curator.py)."""
    yield CurationStarted(earlier=False)
    try:
        outcome = curate(session, model, settings, notes)
    except KeyboardInterrupt:
        if not skippable:
            raise
        yield CurationEnded(skipped=True)
        return
    yield Curated(outcome.message, outcome.noteworthy)
    yield CurationEnded()


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
