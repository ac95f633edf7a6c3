"""How one line of a session log changes what the index holds of its session (log/index.py):
the running figures of its `sessions` row, and the rows it adds to the other tables, gathered
until the fold writes them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import sys
from dataclasses import dataclass, field
from typing import Any

from scribe.log.events import Event, SessionEvent, UnknownEvent, UsageEvent, UserEvent
from scribe.log.figures import Pricer
from scribe.log.index_stats import StatsFold
from scribe.log.search import texts


@dataclass
class Fold:
    """A session's running figures while lines are folded into it."""

    values: dict[str, Any]
    base: int = -1  # the bytes the index covered when this fold last wrote (or began)
    written: int = 0  # the lines it covered then
    usage: list[tuple[Any, ...]] = field(default_factory=list)
    words: list[tuple[int, str, int, str]] = field(default_factory=list)  # seq, type, offset, body
    stats: StatsFold | None = None
    priced: tuple[float | None, float | None] | None = None  # the last usage event's (cost, uncached cost)


def still_covers(fh: Any, row: sqlite3.Row, first_line: bytes) -> bool:
    """The log still holds, unchanged at both ends, the lines the row covers."""
    if row["header_sha256"] != sha256(first_line):
        return False
    start, end = row["last_line_offset"], row["covered"]
    fh.seek(start)
    last = fh.read(end - start)
    fh.seek(0)
    return len(last) == end - start and sha256(last) == row["last_line_sha256"]


def fold_line(fold: Fold, event: Event | None, offset: int, raw: bytes, skipped: bool, price: Pricer) -> None:
    v = fold.values
    if v["lines"] == 0:
        v["header_sha256"] = sha256(raw + b"\n")
    v["last_line_offset"], v["last_line_sha256"] = offset, sha256(raw + b"\n")
    if skipped:
        v["skipped"] += 1
    if event is None:
        return
    if v["events"] == 0 and isinstance(event, SessionEvent):
        v.update(is_session=1, session_created=event.created, session_cwd=event.cwd, model=event.model,
                 parent=str(event.parent["session"]) if isinstance(event.parent, dict) and event.parent.get("session")
                 else None)
    v["events"] += 1
    v["first_ts"] = v["first_ts"] or event.ts
    v["last_ts"] = event.ts
    if isinstance(event, UserEvent):
        v["turns"] += 1
    elif isinstance(event, UsageEvent):
        cost, uncached = fold.priced = price(event)
        for name in ("input", "cache_read", "cache_write", "output"):
            v[name] += getattr(event, name)
        v["calls"] += 1
        if cost is None:  # a model with no price: its cost is unknown, not zero
            v["unpriced"] += 1
        else:
            v["cost_usd"] += cost
            v["uncached_cost_usd"] += uncached or 0.0
        fold.usage.append((event.seq, event.ts, sys.intern(event.purpose), sys.intern(event.model), event.input,
                           event.cache_read, event.cache_write, event.output, event.latency_ms, event.server, cost,
                           uncached))
    body = "\n".join(text for _, text in texts(event, fold.values.get("id") or ""))
    if body:
        type_name = event.type_name if isinstance(event, UnknownEvent) else event.type
        fold.words.append((event.seq, type_name, offset, body))


def first_record(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
