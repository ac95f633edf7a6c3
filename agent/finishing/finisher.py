"""Doing what a session left: its memory compressed as it would be between turns, then the notes
curated from it (and from up to MOST_CURATIONS - 1 earlier sessions that still say something the
notes have not taken). Run as its own process after a run (cli/finish.py, started by
handover.detach), or in the run before it exits (`hand_over` with `housekeeping = "inline"`).

It takes each session's one writer as any writer does, so it never writes beside a run. A run
that continues a session it holds stops it (SIGTERM, which lands here as KeyboardInterrupt): a
compression it was waiting on is recorded as left, and is done again after that run. Nothing of
a turn runs here: no tool, no MCP server, no hook but `pre_compact` before a compression.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from scribe.agent.config import AgentConfig, SessionChoice
from scribe.agent.curation.background import curate_session, uncurated
from scribe.agent.driver import drive
from scribe.agent.finishing.handover import ERRORS_FILE, Handover, detach
from scribe.agent.opening import Opened, assemble
from scribe.agent.protocol import Compressed, Curated, Event
from scribe.log.events import ErrorEvent
from scribe.log.jsonl import LogError, SessionLocked
from scribe.model.errors import ClientSetupError, ModelError
from scribe.model.events import Notice
from scribe.settings.files import ConfigError, state_dir
from scribe.settings.values import Settings

# The most sessions one finisher curates: its own first, then the oldest of the rest. More wait
# for the next one, so a finisher stays short-lived whatever a workspace has piled up.
MOST_CURATIONS = 3
# What it may fail with that is one line in its errors file, not a traceback.
EXPECTED = (LogError, ConfigError, ModelError, ClientSetupError, OSError)


def hand_over(left: Sequence[Handover]) -> Iterator[Notice | Compressed | Curated]:
    """Hand on what the sessions of a closing agent left: to finishers that outlive this
    process, or (`housekeeping = "inline"`) done here now. For work done here, what it is, what
    each compression and curation did, and how long it all took; nothing for work handed on."""
    for handover in left:
        if handover.settings.get("housekeeping") != "inline":
            detach(handover, state_dir(handover.workspace) / ERRORS_FILE)
            continue
        yield Notice(f"before exiting: {handover.what()} (session {handover.session_id})")
        started = time.monotonic()
        yield from finish(handover)
        yield Notice(f"done in {time.monotonic() - started:.1f} s")


def finish(handover: Handover) -> list[Compressed | Curated]:
    """Do what `handover` left; what each compression and curation did."""
    settings = Settings.from_recorded(handover.settings)
    config = AgentConfig(handover.workspace, SessionChoice(session_id=handover.session_id), settings=settings,
                         turns=False, servers=False)
    opened = drive(assemble(config), _unshown)
    done: list[Compressed | Curated] = []
    try:
        if handover.compress:
            done += _compress(opened, handover.session_id)
        if handover.curate and settings.curate_notes:
            done += _curate(opened, settings, handover.session_id)
    finally:
        opened.close()
    return done


def _compress(opened: Opened, session_id: str) -> list[Compressed]:
    try:
        loop = drive(opened.open(SessionChoice(session_id=session_id)), _unshown)
    except SessionLocked:
        return []  # a run writes it now: what is due is handed on again when that run ends
    session, memory = loop.session, loop.memory
    assert memory is not None, "the opening always gives the loop a compressor"
    made: list[Compressed] = []
    try:
        if not memory.due(session, ahead=True):
            return []
        drive(loop.run_hooks("pre_compact", {"trigger": "auto", "custom_instructions": ""}), _unshown)
        made += [event for event in memory.before_call(session, ahead=True) if isinstance(event, Compressed)]
    except KeyboardInterrupt:
        session.append(ErrorEvent, kind="compression_left", purpose="observer",
                       message="the compression after the run was stopped: a run continued the session; what it "
                               "would have compressed is compressed after that run")
        raise
    finally:
        session.sync()
        opened.end()
    return made


def _curate(opened: Opened, settings: Settings, session_id: str) -> list[Curated]:
    pending = uncurated(opened.workspace, settings)
    own = [found for found in pending if found.id == session_id]
    chosen = (own + [found for found in pending if found.id != session_id])[:MOST_CURATIONS]
    done = [curate_session(found, opened.client, settings, opened.workspace) for found in chosen]
    return [Curated(outcome.message, outcome.noteworthy) for outcome in done]


def _unshown(event: Event) -> None:
    """Nobody is there to be told: what matters is in the logs."""
