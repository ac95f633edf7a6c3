"""Curating the project notes at a session's end: one call to the cheaper model merges what the
session taught into `<state>/notes.md`, and the log records the result.

The file is replaced atomically and only with an answer that passed the checks in
memory/notes.py; a failed curation leaves the notes as they were and says why.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from scribe.memory.events import ErrorEvent, NotesEvent, UsageEvent
from scribe.memory.notes import CURATOR_SYSTEM, NotesRefused, accept_notes, curator_input, session_facts
from scribe.memory.render import Request
from scribe.tools.textio import plural

from .config import Settings
from .errors import ModelError
from .model import ModelClient
from .session import Session

CURATOR_MAX_TOKENS = 4096


@dataclass(frozen=True)
class Curation:
    """What a curation did: `written` is False when there was nothing new or it failed."""

    written: bool
    message: str
    entries: int = 0
    noteworthy: bool = True  # False when there was simply nothing new to curate


def curate(session: Session, model: ModelClient, settings: Settings, path: Path) -> Curation:
    since = max((e.upto for e in session.events if isinstance(e, NotesEvent)), default=0)
    facts = session_facts(session.events, since)
    if not facts:
        return Curation(False, "notes: nothing new to curate from this session", noteworthy=False)
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    request = Request.one_shot(settings.observer_model, CURATOR_SYSTEM.format(budget=settings.notes_tokens),
                               curator_input(current, session.id, facts, settings.notes_tokens), CURATOR_MAX_TOKENS)
    try:
        result = model.complete(request)
    except ModelError as exc:
        session.append(ErrorEvent, kind="notes", message=f"notes curation failed: {exc}")
        return Curation(False, f"notes: curation failed ({exc}); the notes are unchanged")
    session.append(UsageEvent, purpose="curator", model=result.model, input=result.input,
                   cache_read=result.cache_read, cache_write=result.cache_write, output=result.output,
                   latency_ms=result.latency_ms, message_id=result.message_id)
    answer = "".join(b.get("text", "") for b in result.content if b.get("type") == "text")
    try:
        notes = accept_notes(answer, settings.notes_tokens, current=current, session_id=session.id)
    except NotesRefused as exc:
        session.append(ErrorEvent, kind="notes", message=f"notes curation refused: {exc}")
        return Curation(False, f"notes: {exc}; the notes are unchanged")
    before = hashlib.sha256(current.encode("utf-8")).hexdigest() if current else None
    _write_atomically(path, notes.text)
    session.append(NotesEvent, path=str(path), text=notes.text, upto=facts[-1].seq, entries=notes.entries,
                   model=result.model, before=before, dropped=notes.dropped)
    session.sync()
    dropped = f" ({len(notes.dropped)} unsourced lines left out)" if notes.dropped else ""
    return Curation(True, f"notes: {plural(notes.entries, 'entry', 'entries')} in {path}{dropped}", notes.entries)


def _write_atomically(path: Path, text: str) -> None:
    """A reader (or the person's editor) sees the old notes or the new, never half of them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
