"""Which observation chunks are in force, and where the raw tail begins: what render and the
compressor need of the whole log, kept current as it grows (ChunkIndex) and saved in the
checkpoint (the chunks by the byte offsets of their lines)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from scribe.log.codec import from_record, to_record
from scribe.log.eventlog import EventLog
from scribe.log.events import (
    ContextWindowEvent,
    Event,
    LeftOutEvent,
    ModelSwitchEvent,
    NoToolsEvent,
    ObservationEvent,
    ReflectionEvent,
    UserEvent,
)

Chunk = ObservationEvent | ReflectionEvent


def active_chunks(events: Sequence[Event]) -> tuple[list[Chunk], int]:
    """Observation chunks in prompt order and the last seq they cover."""
    return ChunkIndex().update(events)


class ChunkIndex:
    """`active_chunks`, and the rest render needs from the whole log (where settled outputs end,
    the model switched to), kept up to date as the log grows: each call reads only the events
    added since the last, so per-call bookkeeping grows with what is new, not with the whole log.

    A reflection takes the place of the oldest chunk it supersedes (it condenses the oldest
    ones), and the chunks it supersedes drop out."""

    def __init__(self) -> None:
        self._seen = 0
        self._last_user = -1
        self.settled_before = -1  # see Settled: the last user message before the latest chunk
        self.model: str | None = None  # the latest ModelSwitchEvent's model, if any
        self.window: ContextWindowEvent | None = None  # the latest learned context window, if any
        self.no_tools: NoToolsEvent | None = None  # the latest news that the server gives no tools
        # Raw events later requests leave out (LeftOutEvent): (seq_from, seq_to), in log order.
        self.left_out: list[tuple[int, int]] = []
        self._chunks: list[Chunk] = []
        # chunk seq -> where its line starts in the log (-1: not known), so that the checkpoint
        # names the chunks in force by place instead of holding their text twice
        self._offsets: dict[int, int] = {}
        # Coverage only grows: a reflection covers what its chunks covered, nothing less.
        self._observed_to = -1

    def update(self, events: Sequence[Event]) -> tuple[list[Chunk], int]:
        if len(events) < self._seen:  # a different, shorter log: start over
            self.__init__()  # type: ignore[misc]
        log = events if isinstance(events, EventLog) and self._seen >= events.start else None
        for position, event in enumerate(events[self._seen:], start=self._seen):
            self._add(event, log.place_of(position)[0] if log is not None else -1)
        self._seen = len(events)
        return list(self._chunks), self._observed_to

    def add(self, event: Event, offset: int = -1) -> None:
        """The next event of the log (reading one as it streams by, without a sequence), whose
        line starts at byte `offset`."""
        self._add(event, offset)
        self._seen += 1

    @property
    def seen(self) -> int:
        """How many events of the log the index has read."""
        return self._seen

    @property
    def observed_to(self) -> int:
        return self._observed_to

    def shown(self, raw: Sequence[Event]) -> Sequence[Event]:
        """The raw events `raw` less those a LeftOutEvent took out of every later request."""
        if not self.left_out:
            return raw
        return [e for e in raw if not any(a <= e.seq <= b for a, b in self.left_out)]

    def _add(self, event: Event, offset: int) -> None:
        if isinstance(event, UserEvent):
            self._last_user = event.seq
        elif isinstance(event, ModelSwitchEvent):
            self.model = event.model
        elif isinstance(event, ContextWindowEvent):
            self.window = event
        elif isinstance(event, NoToolsEvent):
            self.no_tools = event
        elif isinstance(event, LeftOutEvent):
            self.left_out.append((event.seq_from, event.seq_to))
        if isinstance(event, ObservationEvent | ReflectionEvent):
            self._offsets[event.seq] = offset
        if isinstance(event, ObservationEvent):
            self._chunks.append(event)
            self._observed_to = max(self._observed_to, event.seq_to)
            self.settled_before = self._last_user
        elif isinstance(event, ReflectionEvent) and self._reflect(event):
            self.settled_before = self._last_user

    def to_state(self) -> dict[str, Any] | None:
        """What the index knows, as JSON (kept in the session's checkpoint): the chunks in force
        by where their lines are, not their text. None when one of those is not known."""
        places = [self._offsets.get(c.seq, -1) for c in self._chunks]
        if any(offset < 0 for offset in places):
            return None
        return {"seen": self._seen, "last_user": self._last_user, "settled_before": self.settled_before,
                "model": self.model, "chunks": [[c.seq, offset] for c, offset in zip(self._chunks, places, strict=True)],
                "window": to_record(self.window) if self.window is not None else None,
                "no_tools": to_record(self.no_tools) if self.no_tools is not None else None,
                "left_out": [list(r) for r in self.left_out], "observed_to": self._observed_to}

    @classmethod
    def from_state(cls, state: dict[str, Any], chunk_at: Callable[[int], Event | None]) -> ChunkIndex:
        """The index as `to_state` left it, each chunk read back from its line (`chunk_at`, an
        offset: the event there, or None). Raises (KeyError, TypeError, ValueError,
        EventFormatError) on anything else: the checkpoint is then rebuilt from the log."""
        index = cls()
        index._seen, index._last_user = int(state["seen"]), int(state["last_user"])
        index.settled_before, index._observed_to = int(state["settled_before"]), int(state["observed_to"])
        model = state["model"]
        if not (model is None or isinstance(model, str)):
            raise ValueError("model")
        index.model = model
        window = state["window"]
        index.window = None if window is None else from_record(window)  # type: ignore[assignment]
        if not (index.window is None or isinstance(index.window, ContextWindowEvent)):
            raise ValueError("window")
        no_tools = state.get("no_tools")  # a checkpoint older than the event has none to keep
        index.no_tools = None if no_tools is None else from_record(no_tools)  # type: ignore[assignment]
        if not (index.no_tools is None or isinstance(index.no_tools, NoToolsEvent)):
            raise ValueError("no_tools")
        index.left_out = [(int(a), int(b)) for a, b in state["left_out"]]
        for seq, offset in state["chunks"]:
            chunk = chunk_at(int(offset))
            if not isinstance(chunk, (ObservationEvent, ReflectionEvent)) or chunk.seq != seq:
                raise ValueError(f"no chunk of seq {seq} at byte {offset}")
            index._chunks.append(chunk)
            index._offsets[chunk.seq] = int(offset)
        return index

    def _reflect(self, event: ReflectionEvent) -> bool:
        """Put the reflection in place of the chunks it supersedes; False if it supersedes none."""
        gone = set(event.supersedes)
        positions = [i for i, c in enumerate(self._chunks) if c.seq in gone]
        if not positions:
            return False
        first = positions[0]
        self._chunks = ([c for c in self._chunks[:first] if c.seq not in gone] + [event]
                        + [c for c in self._chunks[first:] if c.seq not in gone])
        for seq in gone:
            self._offsets.pop(seq, None)
        return True


def tail_after(events: Sequence[Event], observed_to: int) -> Sequence[Event]:
    """Events after `observed_to`. In a well-formed log seq equals list position, so this is a
    slice, not a scan of the whole log; a log with gaps falls back to the scan (of the part in
    memory, for a reopened log: the raw tail is always there)."""
    if isinstance(events, EventLog):
        return events.after_seq(observed_to)
    start = observed_to + 1
    if 0 <= start < len(events) and events[start].seq == start:
        return events[start:]
    return [e for e in events if e.seq > observed_to]
