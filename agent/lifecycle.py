"""A session's life around its turns, as events a front end shows (agent/protocol.py, run through
agent/driver.py): the earlier sessions curated before a new one starts, the greeting once a
front end runs in a session, and the curation as it ends. Which session to run in, and the
agent for it, are agent/runtime.py's; the MCP servers' start is agent/mcptools.py's.

`skippable`: a person is there, and a Ctrl-C skips a wait they did not ask for. Without one (a
headless run) a KeyboardInterrupt is a signal that ends scribe, and it goes on up."""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from pathlib import Path

from scribe.context.render import current_model
from scribe.model.client import ModelClient
from scribe.settings.values import Settings

from .curator import Curation, curate, curate_earlier
from .loop import Agent
from .mcptools import start_notes
from .protocol import Curated, CurationEnded, CurationStarted, LifeEvent, SessionOpened
from .session import Session


def curating_earlier(workspace: Path, settings: Settings, model: ModelClient, *,
                     skippable: bool = False) -> Generator[LifeEvent, None, None]:
    """Before a new session starts: the earlier sessions of the workspace that said something
    the notes have not taken, curated into them (agent/curator.py), when `curate_notes`."""
    if settings.curate_notes:
        yield from _curation(lambda: curate_earlier(workspace, settings, model), earlier=True, skippable=skippable)


def curating(session: Session, model: ModelClient, settings: Settings, notes: Path, *,
             skippable: bool = False) -> Generator[LifeEvent, None, None]:
    """What `session` taught merged into the project notes at `notes` (agent/curator.py)."""
    yield from _curation(lambda: [curate(session, model, settings, notes)], earlier=False, skippable=skippable)


def _curation(outcomes: Callable[[], Sequence[Curation]], *, earlier: bool,
              skippable: bool) -> Generator[LifeEvent, None, None]:
    yield CurationStarted(earlier)
    try:
        for outcome in outcomes():
            yield Curated(outcome.message, outcome.noteworthy)
    except KeyboardInterrupt:
        if not skippable:
            raise
        yield CurationEnded(skipped=True)
        return
    yield CurationEnded()


def greeting(session: Session, mode: str, *, resumed: bool) -> SessionOpened:
    """What opening `session` says; the MCP servers a session has no tools from are said once,
    as it starts."""
    return SessionOpened(session, current_model(session.events, session.chunks), mode, resumed,
                         tuple(session.problems), tuple(session.notices),
                         () if resumed else tuple(start_notes(session.header)))


def ending(agent: Agent, model: ModelClient, settings: Settings, notes: Path, *,
           skippable: bool = False) -> Generator[LifeEvent, None, None]:
    """An interactive session ends (leaving, /clear, /resume): it is curated when `curate_notes`,
    then the agent and its session are released. (A headless run curates nothing as it ends: a
    `-c` chain is one session, curated once, when the next new session starts.)"""
    try:
        if settings.curate_notes:
            yield from curating(agent.session, model, settings, notes, skippable=skippable)
    finally:
        agent.close()  # stops its file watcher
        agent.session.close()
