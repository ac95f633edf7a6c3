"""Figures of a session, all computed from its log: model calls, tokens, cost, compression.

Pure: events in, figures out. The caller passes a `Pricer` that turns one usage event into
dollars (log/pricing.py's list prices, or a `PriceBook` holding the config's own).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from scribe.context.tokens import event_tokens
from scribe.log.events import Event, ObservationEvent, ReflectionEvent, SessionEvent, UsageEvent, UserEvent
from scribe.log.figures import Figures, Pricer
from scribe.log.health import MemoryHealth, count
from scribe.log.usage import Tokens

PURPOSES = ("agent", "observer", "reflector", "curator")


@dataclass(frozen=True)
class CallFigures:
    seq: int  # of the usage event
    purpose: str
    model: str
    tokens: Tokens
    latency_ms: int
    cost_usd: float | None  # None: the model has no price
    uncached_cost_usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "purpose": self.purpose, "model": self.model, **self.tokens.counts(),
                "latency_ms": self.latency_ms, "cost_usd": _rounded(self.cost_usd),
                "uncached_cost_usd": _rounded(self.uncached_cost_usd)}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 8)


@dataclass
class Compression:
    """How much raw log the observation chunks stand for (token estimates, context/tokens.py)."""

    observations: int = 0
    raw_tokens: int = 0  # estimated tokens of the raw events the observations cover
    observation_tokens: int = 0  # tokens the observations themselves hold
    reflections: int = 0
    reflection_tokens: int = 0

    @property
    def ratio(self) -> float | None:
        return self.raw_tokens / self.observation_tokens if self.observation_tokens else None

    def as_dict(self) -> dict[str, Any]:
        ratio = self.ratio
        return {"observations": self.observations, "raw_tokens": self.raw_tokens,
                "observation_tokens": self.observation_tokens,
                "ratio": round(ratio, 4) if ratio is not None else None,
                "reflections": self.reflections, "reflection_tokens": self.reflection_tokens}


@dataclass
class SessionStats:
    total: Figures = field(default_factory=Figures)
    by_purpose: dict[str, Figures] = field(default_factory=dict)
    calls: list[CallFigures] = field(default_factory=list)
    compression: Compression = field(default_factory=Compression)
    memory: MemoryHealth = field(default_factory=MemoryHealth)
    # The models whose calls had no price, kept whether or not the calls are listed.
    unpriced_models: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {"total": self.total.as_dict(),
                "by_purpose": {k: v.as_dict() for k, v in self.by_purpose.items()},
                "per_call": [c.as_dict() for c in self.calls],
                "compression": self.compression.as_dict(),
                "memory": self.memory.as_dict()}


def figures_of(events: Iterable[Event], price: Pricer | None = None, *, purpose: str | None = None,
               skip_first: int = 0) -> Figures:
    """The sum of the usage events (of one purpose, if given), leaving out the first `skip_first`
    calls; priced when a Pricer is given."""
    figures = Figures()
    seen = 0
    for event in events:
        if isinstance(event, UsageEvent) and (purpose is None or event.purpose == purpose):
            seen += 1
            if seen > skip_first:
                figures.add(event.tokens, *(price(event) if price else (0.0, 0.0)))
    return figures


def session_stats(events: Iterable[Event], price: Pricer, *, per_call: bool = True) -> SessionStats:
    """Every figure in one pass over the events, holding none of them (a log of millions of
    lines is streamed through here); without `per_call`, the calls are summed but not listed."""
    stats = SessionStats()
    tokens_at = SeqTokens()
    observed: list[tuple[int, int]] = []
    health = MemoryHealth()
    for event in events:
        tokens_at.set(event.seq, event_tokens(event))
        count(health, event)
        if isinstance(event, UsageEvent):
            cost, uncached = price(event)
            if cost is None:
                stats.unpriced_models.add(event.model)
            stats.total.add(event.tokens, cost, uncached)
            stats.by_purpose.setdefault(event.purpose, Figures()).add(event.tokens, cost, uncached)
            if per_call:
                stats.calls.append(CallFigures(event.seq, event.purpose, event.model, event.tokens, event.latency_ms,
                                               cost, uncached))
        elif isinstance(event, ObservationEvent):
            stats.compression.observations += 1
            stats.compression.observation_tokens += event.tokens
            observed.append((event.seq_from, event.seq_to))
        elif isinstance(event, ReflectionEvent):
            stats.compression.reflections += 1
            stats.compression.reflection_tokens += event.tokens
    # after the pass: an observation covers whatever events hold those seqs, wherever they are
    stats.compression.raw_tokens = sum(tokens_at.sum(first, last) for first, last in observed)
    order = {p: i for i, p in enumerate(PURPOSES)}
    stats.by_purpose = dict(sorted(stats.by_purpose.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    stats.memory = health
    return stats


class SeqTokens:
    """Estimated tokens by seq, the last event of a seq winning: an array while seqs are what a
    log has (from 0, rising by one a line, a skipped line leaving a gap), so millions of them
    take 8 bytes each, not a dict's hundred; a seq far from the others in a dict. Every seq in
    the dict lies outside the array's range."""

    GAP = 1024  # seqs missing before a new one that are filled with zeros rather than left out

    def __init__(self) -> None:
        self._dense = array("q")
        self._sparse: dict[int, int] = {}

    def set(self, seq: int, tokens: int) -> None:
        dense = self._dense
        if 0 <= seq < len(dense):
            dense[seq] = tokens
        elif len(dense) <= seq <= len(dense) + self.GAP:
            for missing in range(len(dense), seq):
                dense.append(self._sparse.pop(missing, 0) if self._sparse else 0)
            self._sparse.pop(seq, None)
            dense.append(tokens)
        else:
            self._sparse[seq] = tokens

    def sum(self, first: int, last: int) -> int:
        dense = self._dense
        total = sum(dense[max(first, 0):max(min(last + 1, len(dense)), 0)])
        if self._sparse:
            total += sum(tokens for seq, tokens in self._sparse.items() if first <= seq <= last)
        return total


@dataclass(frozen=True)
class SessionSummary:
    """One row of `scribe log list`."""

    id: str
    cwd: str | None
    started: str | None
    last_activity: str | None
    events: int
    turns: int
    figures: Figures
    # What is wrong with its log, if anything: lines the reader skipped, or a first line that is
    # not a session event (then it cannot be continued).
    damaged: str | None = None
    # A sub-agent's: the session whose task call started it.
    parent: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "cwd": self.cwd, "started": self.started, "last_activity": self.last_activity,
                "events": self.events, "turns": self.turns, **self.figures.as_dict(), "damaged": self.damaged,
                "parent": self.parent}


def damage(header_problem: str | None, skipped_lines: int, torn: bool) -> str | None:
    """One phrase for what `scribe log list` shows of a damaged log."""
    if header_problem is not None:
        return f"cannot be continued: {header_problem}"
    parts = [f"{skipped_lines} unreadable line{'s' * (skipped_lines != 1)} skipped"] if skipped_lines else []
    parts += ["torn last line"] if torn else []
    return ", ".join(parts) or None


def summarize(session_id: str, events: Sequence[Event], price: Pricer, damaged: str | None = None) -> SessionSummary:
    figures = Figures()
    for event in events:
        if isinstance(event, UsageEvent):
            figures.add(event.tokens, *price(event))
    head = events[0] if events and isinstance(events[0], SessionEvent) else None
    return SessionSummary(
        id=session_id,
        cwd=head.cwd if head else None,
        started=head.created if head else (events[0].ts if events else None),
        last_activity=events[-1].ts if events else None,
        events=len(events),
        turns=sum(isinstance(e, UserEvent) for e in events),
        figures=figures,
        damaged=damaged,
    )
