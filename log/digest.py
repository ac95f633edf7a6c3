"""What scribe needs to know of a whole session log, folded one event at a time and kept in the
checkpoint, so that nothing on the way to the first request of a continued session reads old
events: what the agent last saw of each file, how many model calls were made (and how many of
the agent's came before each chunk in force), the count of turns, the last activity, what was curated, which commits stand.

Its size does not grow with the calls' usage: that is in the log, and summed in the index
(log/index.py) for `scribe log list` and `scribe log stats`.

Pure: events in, state out; `to_state`/`from_state` are its JSON form in the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scribe.log.events import (
    EXTRACTIVE_MODEL,
    ErrorEvent,
    Event,
    GitCommitEvent,
    GitUndoEvent,
    NotesEvent,
    ObservationEvent,
    ReflectionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.health import MemoryHealth, SideCalls, count

# Positions kept of the latest errors of a kind and of the latest extractive chunks: more than
# the longest streak memory/extract.py asks about.
RECENT = 8
# The agent calls whose (estimate, reported) tokens are kept to calibrate a reopened session's
# estimates: the average the estimator keeps (context/tokens.py) weighs older calls by 0.7 a
# call, so what came before these is under 2% of it.
CALIBRATION_CALLS = 12


@dataclass
class LogDigest:
    events: int = 0
    turns: int = 0  # user events
    last_ts: str | None = None  # of the last event: the session's last activity
    seen: dict[str, str] = field(default_factory=dict)  # path -> sha256 the agent last saw
    calls: int = 0  # model calls (their usage is in the log and the index, not held here)
    agent_calls: int = 0  # of which the agent's own
    # For each observation chunk in force (observation or reflection, by seq), how many agent
    # calls came before it: what reflection's payback counts of the calls that re-read it.
    agent_calls_before: dict[int, int] = field(default_factory=dict)
    notes_upto: int = 0  # the last seq a curation of the notes covered
    commits: list[str] = field(default_factory=list)  # scribe's commits not undone since, oldest first
    health: MemoryHealth = field(default_factory=MemoryHealth)  # side calls made and failed
    # Position of the last event of each type, and of the last error of each kind with the
    # tokens it backs off until: what `backoff` answers without scanning back through the log.
    last_of: dict[str, int] = field(default_factory=dict)
    errors: dict[str, list[int]] = field(default_factory=dict)
    # What memory/extract.model_resting_now asks of the log, kept as it grows: for each
    # kind of error its last RECENT positions, and for observations and reflections the last
    # one a model wrote and the last RECENT written without one (extractive).
    recent_errors: dict[str, list[int]] = field(default_factory=dict)
    last_modelled: dict[str, int] = field(default_factory=dict)
    recent_extractive: dict[str, list[int]] = field(default_factory=dict)
    # The latest agent calls' [estimated, reported] prompt tokens, oldest first: a reopened
    # session's estimator learns from them what the process that made them had learnt.
    calibration: list[list[int]] = field(default_factory=list)

    def add(self, event: Event) -> None:
        position = self.events
        self.events += 1
        self.last_ts = event.ts
        count(self.health, event)
        self.last_of[event.type] = position
        if isinstance(event, ErrorEvent):
            until = event.extra.get("until_tokens", 0)
            self.errors[event.kind] = [position, until if type(until) is int else 0]
            _keep_recent(self.recent_errors.setdefault(event.kind, []), position)
        elif isinstance(event, ObservationEvent | ReflectionEvent):
            if isinstance(event, ReflectionEvent):
                for seq in event.supersedes:
                    self.agent_calls_before.pop(seq, None)
            self.agent_calls_before[event.seq] = self.agent_calls
            if event.model == EXTRACTIVE_MODEL:
                _keep_recent(self.recent_extractive.setdefault(event.type, []), position)
            else:
                self.last_modelled[event.type] = position
        if isinstance(event, UserEvent):
            self.turns += 1
        elif isinstance(event, ToolResultEvent):
            self.seen.update(event.seen)
        elif isinstance(event, UsageEvent):
            self.calls += 1
            if event.purpose == "agent":
                self.agent_calls += 1
                estimate = event.extra.get("estimate")
                if type(estimate) is int and estimate > 0:
                    self.calibration = [*self.calibration, [estimate, event.tokens.prompt_tokens]][-CALIBRATION_CALLS:]
        elif isinstance(event, NotesEvent):
            self.notes_upto = max(self.notes_upto, event.upto)
        elif isinstance(event, GitCommitEvent):
            self.commits.append(event.sha)
        elif isinstance(event, GitUndoEvent) and event.sha in self.commits:
            self.commits.remove(event.sha)

    def backoff(self, kind: str, cleared_by: type[Event]) -> int:
        """What memory/observer.backoff_until finds reading the log backwards: the `until_tokens`
        of the last error of `kind`, unless a `cleared_by` event came after it; 0: none."""
        error = self.errors.get(kind)
        if error is None or self.last_of.get(cleared_by.type, -1) > error[0]:
            return 0
        return error[1]

    def streak(self, kind: str, made: type[Event]) -> tuple[int, int]:
        """(errors of `kind` since the last `made` event a model wrote, extractive `made` events
        since the last of those errors), each counted up to RECENT: what reading the log backwards
        would count, without reading it."""
        modelled = self.last_modelled.get(made.type, -1)
        errors = [p for p in self.recent_errors.get(kind, []) if p > modelled]
        newest = errors[-1] if errors else modelled
        stubs = [p for p in self.recent_extractive.get(made.type, []) if p > newest]
        return len(errors), len(stubs)

    @property
    def last_commit(self) -> str | None:
        return self.commits[-1] if self.commits else None

    def to_state(self) -> dict[str, Any]:
        return {"events": self.events, "turns": self.turns, "last_ts": self.last_ts, "seen": self.seen,
                "calls": self.calls, "agent_calls": self.agent_calls,
                "agent_calls_before": [[seq, n] for seq, n in self.agent_calls_before.items()],
                "notes_upto": self.notes_upto, "commits": self.commits, "last_of": self.last_of, "errors": self.errors,
                "recent_errors": self.recent_errors, "last_modelled": self.last_modelled,
                "recent_extractive": self.recent_extractive, "calibration": self.calibration,
                "health": [[c.made, c.failed, c.last_failure] for c in _side_calls(self.health)]
                + [self.health.last_failure], "model_free": self.health.model_free,
                "left_out": [self.health.left_out, self.health.last_left_out]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LogDigest:
        """Raises (KeyError, TypeError, ValueError) on a state that is not one: the checkpoint is
        then rebuilt."""
        *calls, last_failure = state["health"]
        left_out, last_left_out = state.get("left_out", [0, None])  # a checkpoint older than the count has none
        observer, reflector, curator = (SideCalls(int(made), int(failed), last) for made, failed, last in calls)
        health = MemoryHealth(observer, reflector, curator, last_failure=last_failure, model_free=int(state["model_free"]),
                              left_out=int(left_out), last_left_out=last_left_out)
        digest = cls(int(state["events"]), int(state["turns"]), state["last_ts"], dict(state["seen"]),
                     int(state["calls"]), int(state["agent_calls"]),
                     {int(seq): int(n) for seq, n in state["agent_calls_before"]}, int(state["notes_upto"]),
                     list(state["commits"]), health, {str(k): int(v) for k, v in state["last_of"].items()},
                     {str(k): [int(v[0]), int(v[1])] for k, v in state["errors"].items()},
                     _positions(state["recent_errors"]), {str(k): int(v) for k, v in state["last_modelled"].items()},
                     _positions(state["recent_extractive"]),
                     # a checkpoint written before calibrations were kept has none
                     [[int(e), int(r)] for e, r in state.get("calibration", [])][-CALIBRATION_CALLS:])
        if not (digest.last_ts is None or isinstance(digest.last_ts, str)):
            raise ValueError("last_ts")
        return digest


def _side_calls(health: MemoryHealth) -> tuple[SideCalls, SideCalls, SideCalls]:
    return health.observer, health.reflector, health.curator  # MemoryHealth's field order


def _keep_recent(positions: list[int], position: int) -> None:
    positions.append(position)
    del positions[:-RECENT]


def _positions(state: dict[str, Any]) -> dict[str, list[int]]:
    return {str(k): [int(p) for p in v][-RECENT:] for k, v in state.items()}
