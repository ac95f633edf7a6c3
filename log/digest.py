"""What scribe needs to know of a whole session log, folded one event at a time and kept in the
checkpoint, so that nothing on the way to the first request of a continued session (nor `scribe
log list`) reads old events: what the agent last saw of each file, every model call's usage,
the count of turns, the last activity, what was curated, which commits stand.

Pure: events in, state out; `to_state`/`from_state` are its JSON form in the checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from scribe.log.events import (
    ErrorEvent,
    Event,
    GitCommitEvent,
    GitUndoEvent,
    NotesEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.health import MemoryHealth, SideCalls, count

# A usage event's own fields in the order UsageEvent takes them, the rest of a row being its
# extra fields (a newer scribe's, kept). message_id is left out: nothing priced needs it.
_USAGE_FIELDS = ("seq", "ts", "purpose", "model", "input", "cache_read", "cache_write", "output", "latency_ms")


def _usage_event(row: list[Any]) -> UsageEvent:
    width = len(_USAGE_FIELDS)  # UsageEvent's positional fields, in this order
    return UsageEvent(*row[:width], extra=dict(row[width]) if len(row) > width else {})


def _joined(text: str, rows: list[list[Any]]) -> str:
    """The JSON array `text` with `rows` appended."""
    more = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return more if text == "[]" else text[:-1] + "," + more[1:]


class UsageRows:
    """The usage rows, kept as the checkpoint's JSON text until something prices them: a
    continued `scribe run` never does, and a long session has tens of thousands of calls."""

    def __init__(self, text: str = "[]", count: int = 0) -> None:
        self._text: str | None = text
        self._rows: list[list[Any]] | None = [] if text == "[]" else None
        self._in_text = count  # rows in the text, known without parsing it
        self._added: list[list[Any]] = []
        # While the rows are lists: how many of them `text` has encoded, and that text, so a
        # checkpoint at each turn's end encodes only the calls made since the last one.
        self._encoded: tuple[int, str] = (0, "[]")

    def append(self, row: list[Any]) -> None:
        if self._rows is not None:
            self._rows.append(row)
        else:
            self._added.append(row)

    def __len__(self) -> int:
        return len(self._rows) if self._rows is not None else self._in_text + len(self._added)

    def rows_from(self, first: int) -> list[list[Any]]:
        """Rows `first` on; those appended since the checkpoint need no parse of its text."""
        if self._rows is None and first >= self._in_text:
            return self._added[first - self._in_text:]
        return self.rows()[first:]

    def rows(self) -> list[list[Any]]:
        if self._rows is None:
            assert self._text is not None
            rows = json.loads(self._text)
            if len(rows) != self._in_text or not all(isinstance(r, list) and len(r) >= len(_USAGE_FIELDS)
                                                     for r in rows):
                raise ValueError("usage rows in the checkpoint")
            self._encoded = (self._in_text, self._text)
            self._rows, self._text = rows + self._added, None
            self._added = []
        return self._rows

    def each_row(self) -> Iterator[list[Any]]:
        """Every row, without keeping text-held rows parsed (a reopened session's thousands of
        calls are read when asked for, not held twice)."""
        if self._rows is not None:
            yield from self._rows
            return
        assert self._text is not None
        yield from (json.loads(self._text) if self._in_text else [])
        yield from self._added

    def hold_as_text(self) -> None:
        """Hold the rows as their JSON text, as a reopen from the checkpoint does: a long log's
        rows take about half the memory as text as they do as lists."""
        if self._rows:
            self._text, self._in_text, self._rows = self.text(), len(self._rows), None

    def text(self) -> str:
        if self._rows is not None:
            done, text = self._encoded
            if done < len(self._rows):
                text = _joined(text, self._rows[done:])
                self._encoded = (len(self._rows), text)
            return text
        assert self._text is not None
        return _joined(self._text, self._added) if self._added else self._text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UsageRows) and self.rows() == other.rows()


@dataclass
class LogDigest:
    events: int = 0
    turns: int = 0  # user events
    last_ts: str | None = None  # of the last event: the session's last activity
    seen: dict[str, str] = field(default_factory=dict)  # path -> sha256 the agent last saw
    # One row per model call, what pricing needs of it: _USAGE_FIELDS then a dict of extras.
    usage: UsageRows = field(default_factory=UsageRows)
    notes_upto: int = 0  # the last seq a curation of the notes covered
    commits: list[str] = field(default_factory=list)  # scribe's commits not undone since, oldest first
    health: MemoryHealth = field(default_factory=MemoryHealth)  # side calls made and failed
    # Position of the last event of each type, and of the last error of each kind with the
    # tokens it backs off until: what `backoff` answers without scanning back through the log.
    last_of: dict[str, int] = field(default_factory=dict)
    errors: dict[str, list[int]] = field(default_factory=dict)
    # What the first `calls` calls cost, as priced by the pricing named `key` (agent/pricing.py
    # prices; memory only keeps the sum): listing sessions then prices only newer calls.
    priced: dict[str, Any] | None = field(default=None, compare=False)
    _calls: list[UsageEvent] = field(default_factory=list, init=False, repr=False, compare=False)

    def add(self, event: Event) -> None:
        position = self.events
        self.events += 1
        self.last_ts = event.ts
        count(self.health, event)
        self.last_of[event.type] = position
        if isinstance(event, ErrorEvent):
            until = event.extra.get("until_tokens", 0)
            self.errors[event.kind] = [position, until if type(until) is int else 0]
        if isinstance(event, UserEvent):
            self.turns += 1
        elif isinstance(event, ToolResultEvent):
            self.seen.update(event.seen)
        elif isinstance(event, UsageEvent):
            row: list[Any] = [getattr(event, name) for name in _USAGE_FIELDS]
            # One string per purpose and model, not one per call: a long log has tens of thousands.
            row[2], row[3] = sys.intern(row[2]), sys.intern(row[3])
            self.usage.append(row + [event.extra] if event.extra else row)
        elif isinstance(event, NotesEvent):
            self.notes_upto = max(self.notes_upto, event.upto)
        elif isinstance(event, GitCommitEvent):
            self.commits.append(event.sha)
        elif isinstance(event, GitUndoEvent) and event.sha in self.commits:
            self.commits.remove(event.sha)

    def calls(self) -> list[UsageEvent]:
        """Every model call as a usage event; each made from its row once (the REPL's figures
        ask again at every turn)."""
        made = self._calls
        made.extend(self.each_call(len(made)))
        return made

    def call_seqs(self, purpose: str) -> list[int]:
        """The seqs of the calls made for `purpose`, in log order: no event is made or read."""
        return [row[0] for row in self.usage.each_row() if row[2] == purpose]

    def each_call(self, first: int = 0) -> Iterator[UsageEvent]:
        """The model calls from the `first`-th on, one at a time and not kept: pricing a long
        log whole (before its first checkpoint) must not hold tens of thousands of events."""
        for row in self.usage.rows_from(first):
            yield _usage_event(row)

    def backoff(self, kind: str, cleared_by: type[Event]) -> int:
        """What memory/observer.backoff_until finds reading the log backwards: the `until_tokens`
        of the last error of `kind`, unless a `cleared_by` event came after it; 0: none."""
        error = self.errors.get(kind)
        if error is None or self.last_of.get(cleared_by.type, -1) > error[0]:
            return 0
        return error[1]

    @property
    def last_commit(self) -> str | None:
        return self.commits[-1] if self.commits else None

    def to_state(self) -> dict[str, Any]:
        return {"events": self.events, "turns": self.turns, "last_ts": self.last_ts, "seen": self.seen,
                "usage": (usage := self.usage.text()), "usage_sha256": _sha256(usage), "usage_count": len(self.usage),
                "priced": self.priced,
                "notes_upto": self.notes_upto, "commits": self.commits, "last_of": self.last_of, "errors": self.errors,
                "health": [[c.made, c.failed, c.last_failure] for c in _side_calls(self.health)]
                + [self.health.last_failure], "model_free": self.health.model_free}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LogDigest:
        """Raises (KeyError, TypeError, ValueError) on a state that is not one: the checkpoint is
        then rebuilt."""
        *calls, last_failure = state["health"]
        health = MemoryHealth(*(SideCalls(int(made), int(failed), last) for made, failed, last in calls),
                              last_failure=last_failure, model_free=int(state["model_free"]))
        usage = state["usage"]
        if not isinstance(usage, str) or _sha256(usage) != state["usage_sha256"]:
            raise ValueError("usage rows")  # parsed only when priced: checked whole here instead
        digest = cls(int(state["events"]), int(state["turns"]), state["last_ts"], dict(state["seen"]),
                     UsageRows(usage, int(state["usage_count"])), int(state["notes_upto"]), list(state["commits"]),
                     health, {str(k): int(v) for k, v in state["last_of"].items()},
                     {str(k): [int(v[0]), int(v[1])] for k, v in state["errors"].items()},
                     state["priced"] if isinstance(state["priced"], dict) else None)
        if not (digest.last_ts is None or isinstance(digest.last_ts, str)):
            raise ValueError("last_ts")
        return digest


def _side_calls(health: MemoryHealth) -> tuple[SideCalls, SideCalls, SideCalls]:
    return health.observer, health.reflector, health.curator  # MemoryHealth's field order


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
