"""Builders for what many tests start from: a session's header event (the first line of every
log), with the fields a test does not care about filled in. A test names only what it is
about; `header_fields` is the same for a writer's `append(SessionEvent, ...)`."""

from __future__ import annotations

from typing import Any

from scribe.log.events import SessionEvent

WHEN = "2026-01-01T00:00:00.000Z"
HEADER: dict[str, Any] = {"id": "s", "created": WHEN, "cwd": "/w", "model": "m", "scribe_version": "0",
                          "system": "You are scribe.", "tools": [], "prompt_hash": "h", "config": {}}


def header_fields(**fields: Any) -> dict[str, Any]:
    """A session event's fields (but seq and ts, which a writer sets): the defaults above, then
    `fields`."""
    return {**HEADER, **fields}


def session_header(*, ts: str = WHEN, **fields: Any) -> SessionEvent:
    """A session event at seq 0."""
    return SessionEvent(seq=0, ts=ts, **header_fields(**fields))
