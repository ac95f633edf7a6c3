"""What `scribe log stats` shows of one session, kept in the index (log/index.py) as its log is
folded: the calls summed per purpose in log order, memory's health, the observations' counts and
the token estimate of every event, so the figures of a session of millions of lines are read back
in a few queries instead of from its whole log.

Sums of dollars are kept as running sums, one addition per call in log order, never as sums of
batches: a float sum taken in another order can differ in its last digits, and the figures must
be the streamed ones to the byte.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scribe.log.events import Event, ObservationEvent, ReflectionEvent, UsageEvent
from scribe.log.figures import Figures
from scribe.log.health import MemoryHealth, SideCalls, count

# An event's estimated prompt tokens (context/tokens.py's event_tokens: the index cannot import it).
Estimate = Callable[[Event], int]

_SIDE_CALLS = ("observer", "reflector", "curator")
_FIGURES = ("calls", "input", "cache_read", "cache_write", "output", "cost_usd", "uncached_cost_usd", "unpriced")


@dataclass
class IndexedStats:
    """One session's `scribe log stats` figures as the index holds them (the calls not listed)."""

    total: Figures
    by_purpose: dict[str, Figures]  # by purpose name (`log stats` puts them in its order)
    unpriced_models: set[str]
    observations: int
    observation_tokens: int
    raw_tokens: int  # estimated tokens of the events the observations cover
    reflections: int
    reflection_tokens: int
    memory: MemoryHealth


@dataclass
class StatsFold:
    """The part of one session's fold that only `log stats` needs, carried between batches."""

    db: sqlite3.Connection
    session: int  # its sessions.rowid
    purposes: dict[str, Figures]
    health: MemoryHealth
    # Observations that reach past every seq seen when they came: the only ones a new seq can fall in.
    reaching: list[tuple[int, int]]
    tokens: dict[int, int] = field(default_factory=dict)  # seq -> estimate, since the last write
    observed: list[tuple[int, int, int]] = field(default_factory=list)  # (seq, seq_from, seq_to), likewise

    @classmethod
    def resume(cls, db: sqlite3.Connection, values: dict[str, Any]) -> StatsFold:
        """Carry on from what the index holds of the session (nothing, for one folded anew)."""
        rowid = values["rowid"]
        purposes = {row[0]: Figures.of_row(*row[1:]) for row in db.execute(
            f"SELECT purpose, {', '.join(_FIGURES)} FROM usage_purposes WHERE session = ?", (rowid,))}
        side = [SideCalls(values[f"{name}_made"], values[f"{name}_failed"], values[f"{name}_last_failure"])
                for name in _SIDE_CALLS]
        observer, reflector, curator = side
        health = MemoryHealth(observer, reflector, curator, last_failure=values["last_failure"], model_free=values["model_free"],
                              left_out=values["left_out"], last_left_out=values["last_left_out"])
        reaching = [(low, high) for low, high in db.execute(
            "SELECT seq_from, seq_to FROM observed WHERE session = ? AND seq_to > ?", (rowid, values["last_seq"]))]
        return cls(db, rowid, purposes, health, reaching)

    def add(self, values: dict[str, Any], event: Event, estimate: Estimate, priced: tuple[Any, Any] | None,
            seen_seq: int) -> None:
        """Fold one event in; `priced` is a usage event's (cost, uncached cost), `seen_seq` the
        highest seq before this event (an event at or below it may replace another's estimate)."""
        count(self.health, event)
        self._estimated(values, event.seq, estimate(event), seen_seq)
        if isinstance(event, UsageEvent):
            assert priced is not None
            self.purposes.setdefault(event.purpose, Figures()).add(event.tokens, *priced)
        elif isinstance(event, ObservationEvent):
            values["observations"] += 1
            values["observation_tokens"] += event.tokens
            values["raw_tokens"] += self._tokens_between(event.seq_from, event.seq_to)
            self.observed.append((event.seq, event.seq_from, event.seq_to))
            if event.seq_to > max(seen_seq, event.seq):
                self.reaching.append((event.seq_from, event.seq_to))
        elif isinstance(event, ReflectionEvent):
            values["reflections"] += 1
            values["reflection_tokens"] += event.tokens

    # `raw_tokens` is kept as the sum, over the observations so far, of the estimates of the
    # events holding their seqs as they stand (the last event of a seq standing): what
    # `session_stats` sums once the whole log is read. A new estimate for a seq moves it by its
    # change times the observations covering that seq; a new observation adds its seqs' sum.

    def _estimated(self, values: dict[str, Any], seq: int, tokens: int, seen_seq: int) -> None:
        if seq > seen_seq:  # a new seq: no estimate before, and only reaching observations cover it
            self.reaching = [r for r in self.reaching if r[1] >= seq]
            before, covering = 0, sum(1 for low, high in self.reaching if low <= seq)
            if tokens:
                self.tokens[seq] = tokens
        else:  # a seq seen before, perhaps: this estimate replaces its last
            before = self._tokens_between(seq, seq)
            covering = self.db.execute("SELECT count(*) FROM observed WHERE session = ? AND seq_from <= ? "
                                       "AND seq_to >= ?", (self.session, seq, seq)).fetchone()[0]
            covering += sum(1 for _, low, high in self.observed if low <= seq <= high)
            self.tokens[seq] = tokens
        values["raw_tokens"] += (tokens - before) * covering

    def _tokens_between(self, first: int, last: int) -> int:
        """The estimates of the seqs `first` to `last` as they stand (written, or since)."""
        held = self.tokens
        total = sum(tokens for seq, tokens in self.db.execute(
            "SELECT seq, tokens FROM event_tokens WHERE session = ? AND seq BETWEEN ? AND ?",
            (self.session, first, last)) if seq not in held)
        if last - first < len(held):
            return total + sum(held.get(seq, 0) for seq in range(first, last + 1))
        return total + sum(tokens for seq, tokens in held.items() if first <= seq <= last)

    def write(self, db: sqlite3.Connection, values: dict[str, Any]) -> None:
        """Within the fold's transaction: what was folded since the last write."""
        rowid = values["rowid"]
        db.executemany("INSERT OR REPLACE INTO event_tokens VALUES (?,?,?)",
                       [(rowid, *t) for t in self.tokens.items()])
        db.executemany("INSERT INTO observed (session, seq, seq_from, seq_to) VALUES (?,?,?,?)",
                       [(rowid, *o) for o in self.observed])
        write_purposes(db, rowid, self.purposes)
        for name, calls in zip(_SIDE_CALLS, (self.health.observer, self.health.reflector, self.health.curator),
                               strict=True):
            values.update({f"{name}_made": calls.made, f"{name}_failed": calls.failed,
                           f"{name}_last_failure": calls.last_failure})
        values.update(last_failure=self.health.last_failure, model_free=self.health.model_free,
                      left_out=self.health.left_out, last_left_out=self.health.last_left_out)
        self.tokens.clear()
        self.observed.clear()


def write_purposes(db: sqlite3.Connection, rowid: int, purposes: dict[str, Figures]) -> None:
    """The running sums as they stand (each replaces the row before it)."""
    db.executemany(f"INSERT OR REPLACE INTO usage_purposes (session, purpose, {', '.join(_FIGURES)}) "
                   f"VALUES (?,?,{','.join('?' * len(_FIGURES))})",
                   [(rowid, name, *f.row()) for name, f in purposes.items()])


def read_stats(db: sqlite3.Connection, row: sqlite3.Row) -> IndexedStats:
    """The figures of the session of `row` (a `sessions` row), in two queries."""
    rowid = row["rowid"]
    by_purpose = {r[0]: Figures.of_row(*r[1:]) for r in db.execute(
        f"SELECT purpose, {', '.join(_FIGURES)} FROM usage_purposes WHERE session = ?", (rowid,))}
    unpriced = {r[0] for r in db.execute(
        "SELECT DISTINCT model FROM usage_quarters WHERE session = ? AND unpriced > 0", (rowid,))}
    total = Figures.of_row(*(row[k] for k in _FIGURES))
    side = [SideCalls(row[f"{name}_made"], row[f"{name}_failed"], row[f"{name}_last_failure"]) for name in _SIDE_CALLS]
    observer, reflector, curator = side
    health = MemoryHealth(observer, reflector, curator, last_failure=row["last_failure"], model_free=row["model_free"],
                          left_out=row["left_out"], last_left_out=row["last_left_out"])
    return IndexedStats(total, by_purpose, unpriced, row["observations"], row["observation_tokens"], row["raw_tokens"],
                        row["reflections"], row["reflection_tokens"], health)
