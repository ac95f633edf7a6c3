"""Is memory working? Counted from the log: observations, reflections and curations made, side
calls that failed (an API error, or an answer refused by its reader) and the last reason, and the
turns left out because memory could not make room for them in the window, with why.

Pure: events in, figures out. `/stats`, `scribe log stats` and `scribe run --output json` show
these, so a session whose compression keeps failing says so instead of quietly growing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scribe.log.events import (
    EXTRACTIVE_MODEL,
    ErrorEvent,
    Event,
    LeftOutEvent,
    NotesEvent,
    ObservationEvent,
    ReflectionEvent,
)

# The error kinds a failed side call leaves in the log, and the call they belong to.
FAILURE_KINDS = {"observe_backoff": "observer", "reflect_backoff": "reflector", "notes": "curator"}


@dataclass
class SideCalls:
    made: int = 0  # observations, reflections or curations kept
    failed: int = 0  # calls that failed or whose answers were refused
    last_failure: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"made": self.made, "failed": self.failed, "last_failure": self.last_failure}


@dataclass
class MemoryHealth:
    observer: SideCalls = field(default_factory=SideCalls)
    reflector: SideCalls = field(default_factory=SideCalls)
    curator: SideCalls = field(default_factory=SideCalls)
    last_failure: str | None = None  # the latest failure of any side call
    model_free: int = 0  # observations made without a model, its answer unusable (memory/extract.py)
    left_out: int = 0  # turns memory could not make room for (`left_out` events)
    last_left_out: str | None = None  # why, the last time

    @property
    def failed(self) -> int:
        return self.observer.failed + self.reflector.failed + self.curator.failed

    def summary(self) -> str:
        """One line for people: what memory made, and what failed, with the last reason. What
        models made and what was made without one are counted apart, and said so: the
        observations `scribe log stats` counts are both."""
        made = (f"by a model {_count(self.observer.made, 'observation')}, "
                f"{_count(self.reflector.made, 'reflection')}, {_count(self.curator.made, 'curation')}")
        if self.model_free:
            made += f"; without a model {_count(self.model_free, 'summary', 'summaries')}"
        room = (f"; memory could not make room for {_count(self.left_out, 'turn')}, left out of later requests, "
                f"last: {self.last_left_out}" if self.left_out else "")
        if not self.failed:
            return made + "; no side call failed" + room
        parts = [f"{calls.failed} {name}" for name, calls in
                 (("observer", self.observer), ("reflector", self.reflector), ("curator", self.curator))
                 if calls.failed]
        return (f"{made}; {_count(self.failed, 'side call')} failed ({', '.join(parts)}), last: {self.last_failure}"
                + room)

    def as_dict(self) -> dict[str, Any]:
        return {"observations": self.observer.made, "reflections": self.reflector.made,
                "curations": self.curator.made, "model_free": self.model_free, "failed": self.failed,
                "last_failure": self.last_failure, "left_out": self.left_out, "last_left_out": self.last_left_out,
                "by_purpose": {"observer": self.observer.as_dict(), "reflector": self.reflector.as_dict(),
                               "curator": self.curator.as_dict()}}


def _count(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


def memory_health(events: Sequence[Event]) -> MemoryHealth:
    health = MemoryHealth()
    for event in events:
        count(health, event)
    return health


def count(health: MemoryHealth, event: Event) -> None:
    """Add one event of the log to `health` (a session's digest keeps it this way as it grows)."""
    if isinstance(event, ObservationEvent | ReflectionEvent) and event.model == EXTRACTIVE_MODEL:
        health.model_free += 1
    elif isinstance(event, ObservationEvent):
        health.observer.made += 1
    elif isinstance(event, ReflectionEvent):
        health.reflector.made += 1
    elif isinstance(event, NotesEvent):
        health.curator.made += 1
    elif isinstance(event, LeftOutEvent):
        health.left_out += 1
        health.last_left_out = event.reason
    elif isinstance(event, ErrorEvent) and event.kind in FAILURE_KINDS:
        calls: SideCalls = getattr(health, FAILURE_KINDS[event.kind])
        # A reflection is tried several times before it backs off; each try was a call.
        calls.failed += int(event.extra.get("attempts", 1))
        calls.last_failure = health.last_failure = event.message


def refusals_in_a_row(events: Sequence[Event], kind: str, cleared_by: type[Event]) -> int:
    """Failures of `kind` since the last `cleared_by` event (a success), newest first. A
    model-free observation is no success of the model's: it does not clear the count."""
    count = 0
    for event in reversed(events):
        if isinstance(event, cleared_by) and getattr(event, "model", None) != EXTRACTIVE_MODEL:
            break
        if isinstance(event, ErrorEvent) and event.kind == kind:
            count += 1
    return count
