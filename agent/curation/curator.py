"""Curating the project notes: one call to the cheaper model merges what a session taught into
`<state>/notes.md`, and that session's log records the result.

Curation is a session's act, not a run's. The notes are read only when a new session starts, so
that is when earlier sessions are curated (in the background: agent/curation/background.py), besides
`scribe notes curate` and `/notes curate`. What has been
curated is read from each log (`notes` events), so a chain of `scribe run -c` costs one
curation, not one per run.

The file is replaced atomically and only with an answer that passed its reader
(memory/notes_reader.py); a failed curation leaves the notes as they were and says why.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scribe.agent.session.instructions import InstructionFileRefused, notes_text
from scribe.agent.session.session import Session, session_window, side_model
from scribe.context.budget import InputBudget
from scribe.context.tokens import estimate_text
from scribe.log.chunks import tail_after
from scribe.log.events import ErrorEvent, Event, NotesEvent
from scribe.log.filelock import LockWaitedTooLong, held
from scribe.log.private import make_private_folder, write_private
from scribe.memory.answer import UnusableAnswer
from scribe.memory.answer_tools import NOTES_TOOL, NOTES_TOOL_NAME, notes_from_tool
from scribe.memory.notes import (
    CURATOR_SYSTEM,
    SessionFacts,
    curator_input,
    facts_within,
    read_notes,
    session_facts,
)
from scribe.model.client import ModelClient
from scribe.model.errors import ModelError
from scribe.model.sidecall import side_answer, side_request
from scribe.model.window import side_call_limit
from scribe.settings.values import Settings
from scribe.tools.secrets import Redactor
from scribe.tools.textio import plural

# The curator's input around the notes and the facts: its headings and closing line.
INPUT_FRAMING_TOKENS = 60
# Below this many tokens for facts, a curation could not say anything new: it is not attempted.
LEAST_ROOM_FOR_FACTS = 200
# Beside the notes: held from reading them to writing them, so two curations (a finisher's and a
# person's, two finishers') never write over each other's entries. The longest one waits its turn.
NOTES_LOCK = "notes.lock"
NOTES_WAIT_S = 600.0


@dataclass(frozen=True)
class Curation:
    """What a curation did: `written` is False when there was nothing new or it failed."""

    written: bool
    message: str
    entries: int = 0
    noteworthy: bool = True  # False when there was simply nothing new to curate


def curate(session: Session, model: ModelClient, settings: Settings, path: Path, *, asked: bool = False) -> Curation:
    """Merge what `session` taught since its last curation into the notes at `path`. Nobody
    `asked` (housekeeping): only a session that taught something (memory/notes.teaches) is worth
    the call; a person who asked has whatever the session said curated."""
    events = session.events
    since = session.digest.notes_upto  # the last `notes` event's upto, kept as the log grows
    system = CURATOR_SYSTEM.format(budget=settings.notes_tokens)
    limit = side_call_limit(settings.side_call_tokens, session_window(session, settings.context_tokens))
    most = InputBudget(limit).room(system) - INPUT_FRAMING_TOKENS  # the room for facts with no notes yet
    facts = session_facts(events, since, tokens=max(most, 0))
    if not facts.count:
        return Curation(False, "notes: nothing new to curate from this session", noteworthy=False)
    if not asked and not facts.lessons:
        return Curation(False, "notes: nothing in this session is meant to last; not curated", noteworthy=False)
    # A refusal follows what it read: one that read the newest fact comes after it.
    if facts.last_seq <= _refused_upto(tail_after(events, facts.last_seq), since):
        return Curation(False, "notes: nothing new since this session's last curation was refused", noteworthy=False)
    try:
        with held(path.with_name(NOTES_LOCK), NOTES_WAIT_S, "another curation"):
            return _merge(session, model, settings, path, facts, most, limit, system)
    except LockWaitedTooLong as exc:
        return Curation(False, f"notes: {exc}; not curated this time")


def _merge(session: Session, model: ModelClient, settings: Settings, path: Path, facts: SessionFacts, most: int,
           limit: int, system: str) -> Curation:
    try:
        current = Redactor.from_environ()(notes_text(path) or "")
    except InstructionFileRefused as exc:
        return Curation(False, f"notes: {exc}; nothing was curated")
    room = most - estimate_text(current)
    if room < LEAST_ROOM_FOR_FACTS:
        message = (f"notes curation skipped: {path} holds about {estimate_text(current):,} tokens, which leaves no "
                   f"room for new facts within side_call_tokens ({limit:,}); shorten it")
        session.append(ErrorEvent, kind="notes", message=message, purpose="curator")
        return Curation(False, f"notes: {message.removeprefix('notes curation ')}")
    chosen, left_out = facts_within(facts.newest, room)
    skipped = left_out + facts.count - len(facts.newest)
    request = side_request(side_model(session, settings), system,
                           curator_input(current, session.id, chosen, settings.notes_tokens),
                           settings.side_call_max_tokens, NOTES_TOOL if settings.side_call_tools else None)
    try:
        result = model.complete(request)
    except ModelError as exc:
        session.append(ErrorEvent, kind="notes", message=f"notes curation failed: {exc}", purpose="curator")
        return Curation(False, f"notes: curation failed ({exc}); the notes are unchanged")
    session.record_call(result, "curator")
    try:
        answer, via = side_answer(result, NOTES_TOOL_NAME, notes_from_tool)
        notes = read_notes(answer, settings.notes_tokens, current=current, session_id=session.id, facts=chosen)
    except UnusableAnswer as exc:  # NotesRefused, or a tool input with nothing usable and no text
        # `upto`: this answer is not asked for again until the session says something new.
        session.append(ErrorEvent, kind="notes", message=f"notes curation refused: {exc}", purpose="curator",
                       refused=True, upto=facts.last_seq)
        # `scribe log stats` counts it among the side calls that failed: not worth a word at a start.
        return Curation(False, f"notes: {exc}; the notes are unchanged", noteworthy=False)
    before = hashlib.sha256(current.encode("utf-8")).hexdigest() if current else None
    _write_atomically(path, notes.text)
    extra = {"skipped": skipped} if skipped else {}
    session.append(NotesEvent, path=str(path), text=notes.text, upto=facts.last_seq, entries=notes.entries,
                   model=result.model, before=before, dropped=notes.dropped, matched=notes.matched, via=via, **extra)
    session.sync()
    dropped = f"; {len(notes.dropped)} lines with no source left out" if notes.dropped else ""
    older = f"; {skipped} older facts past side_call_tokens left out" if skipped else ""
    return Curation(True, f"notes: {plural(notes.entries, 'entry', 'entries')} in {path} "
                          f"(from session {session.id}{dropped}{older})",
                    notes.entries)


def _refused_upto(events: Sequence[Event], since: int) -> int:
    """The last fact a refused curation of this session read (after `since`), or -1."""
    return max((int(e.extra["upto"]) for e in events if isinstance(e, ErrorEvent) and e.kind == "notes"
                and e.extra.get("refused") and isinstance(e.extra.get("upto"), int) and e.extra["upto"] > since),
               default=-1)


def _write_atomically(path: Path, text: str) -> None:
    """A reader (or the person's editor) sees the old notes or the new, never half of them."""
    make_private_folder(path.parent)
    write_private(path, text)
