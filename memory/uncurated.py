"""Which sessions have said something the project notes have not taken yet.

Decided from each log alone: a session needs curating when a fact (a person's message, a 🔴
observation) comes after its last `notes` event, and after the last curation that was refused
(a refused answer is not retried until the session says something new). The log is read from
its end, a block at a time, and only until the first line that decides, so a long session costs
about as little to check as a short one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scribe.log.codec import EventFormatError, from_record

from .notes import teaches

BLOCK = 64 * 1024
# Only these lines can decide; the rest are skipped without being parsed.
_DECIDING = (b'"type":"user"', b'"type":"notes"', b'"type":"observation"', b'"type":"reflection"',
             b'"type":"error"')


def needs_curation(path: Path) -> bool:
    refused_upto = -1
    for record in _records_backwards(path):
        kind = record.get("type")
        if kind == "notes":
            return False
        if kind == "error":
            if record.get("kind") == "notes" and record.get("refused") and isinstance(record.get("upto"), int):
                refused_upto = max(refused_upto, record["upto"])
            continue
        try:
            event = from_record(record)
        except EventFormatError:
            continue
        if teaches(event):
            return event.seq > refused_upto
    return False


def _records_backwards(path: Path) -> Iterator[dict[str, Any]]:
    """The log's deciding lines, last first. A torn or unreadable line is passed over."""
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        end = handle.seek(0, os.SEEK_END)
        carry = b""
        while end > 0:
            start = max(0, end - BLOCK)
            handle.seek(start)
            data = handle.read(end - start) + carry
            end = start
            lines = data.split(b"\n")
            carry = lines.pop(0) if start > 0 else b""  # may be the second half of a line
            for line in reversed(lines):
                record = _deciding(line)
                if record is not None:
                    yield record
        if carry:
            record = _deciding(carry)
            if record is not None:
                yield record


def _deciding(line: bytes) -> dict[str, Any] | None:
    if not any(marker in line for marker in _DECIDING):
        return None
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None
