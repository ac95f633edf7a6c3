"""What scribe needs to know of a whole session log, folded one event at a time and kept in the
checkpoint, so that nothing on the way to the first request of a continued session (nor `scribe
log list`) reads old events: what the agent last saw of each file, every model call's usage,
the count of turns, the last activity, what was curated, which commits stand.

Pure: events in, state out; `to_state`/`from_state` are its JSON form in the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .events import Event, GitCommitEvent, GitUndoEvent, NotesEvent, ToolResultEvent, UsageEvent, UserEvent
from .health import MemoryHealth, SideCalls, count

# A usage event's own fields in the order UsageEvent takes them, the rest of a row being its
# extra fields (a newer scribe's, kept). message_id is left out: nothing priced needs it.
_USAGE_FIELDS = ("seq", "ts", "purpose", "model", "input", "cache_read", "cache_write", "output", "latency_ms")


@dataclass
class LogDigest:
    events: int = 0
    turns: int = 0  # user events
    last_ts: str | None = None  # of the last event: the session's last activity
    seen: dict[str, str] = field(default_factory=dict)  # path -> sha256 the agent last saw
    # One row per model call, what pricing needs of it: _USAGE_FIELDS then a dict of extras.
    usage: list[list[Any]] = field(default_factory=list)
    notes_upto: int = 0  # the last seq a curation of the notes covered
    commits: list[str] = field(default_factory=list)  # scribe's commits not undone since, oldest first
    health: MemoryHealth = field(default_factory=MemoryHealth)  # side calls made and failed
    _calls: list[UsageEvent] = field(default_factory=list, init=False, repr=False, compare=False)

    def add(self, event: Event) -> None:
        self.events += 1
        self.last_ts = event.ts
        count(self.health, event)
        if isinstance(event, UserEvent):
            self.turns += 1
        elif isinstance(event, ToolResultEvent):
            self.seen.update(event.seen)
        elif isinstance(event, UsageEvent):
            row: list[Any] = [getattr(event, name) for name in _USAGE_FIELDS]
            self.usage.append(row + [event.extra] if event.extra else row)
        elif isinstance(event, NotesEvent):
            self.notes_upto = max(self.notes_upto, event.upto)
        elif isinstance(event, GitCommitEvent):
            self.commits.append(event.sha)
        elif isinstance(event, GitUndoEvent) and event.sha in self.commits:
            self.commits.remove(event.sha)

    def calls(self) -> list[UsageEvent]:
        """Every model call as its usage event (what pricing takes), made from the rows once."""
        made = self._calls
        width = len(_USAGE_FIELDS)  # UsageEvent's positional fields, in this order
        for row in self.usage[len(made):]:
            made.append(UsageEvent(*row[:width], extra=dict(row[width]) if len(row) > width else {}))
        return made

    @property
    def last_commit(self) -> str | None:
        return self.commits[-1] if self.commits else None

    def to_state(self) -> dict[str, Any]:
        return {"events": self.events, "turns": self.turns, "last_ts": self.last_ts, "seen": self.seen,
                "usage": self.usage, "notes_upto": self.notes_upto, "commits": self.commits,
                "health": [[c.made, c.failed, c.last_failure] for c in _side_calls(self.health)]
                + [self.health.last_failure]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LogDigest:
        """Raises (KeyError, TypeError, ValueError) on a state that is not one: the checkpoint is
        then rebuilt."""
        *calls, last_failure = state["health"]
        health = MemoryHealth(*(SideCalls(int(made), int(failed), last) for made, failed, last in calls),
                              last_failure=last_failure)
        digest = cls(int(state["events"]), int(state["turns"]), state["last_ts"], dict(state["seen"]),
                     list(state["usage"]), int(state["notes_upto"]), list(state["commits"]), health)
        if not all(isinstance(r, list) and len(r) >= len(_USAGE_FIELDS) for r in digest.usage):
            raise ValueError("usage rows")
        if not (digest.last_ts is None or isinstance(digest.last_ts, str)):
            raise ValueError("last_ts")
        return digest


def _side_calls(health: MemoryHealth) -> tuple[SideCalls, SideCalls, SideCalls]:
    return health.observer, health.reflector, health.curator  # MemoryHealth's field order
