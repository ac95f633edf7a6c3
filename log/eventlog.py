"""A session's events as one sequence (position 0 is the session event), of which only the
recent part is in memory: reopening a long session parses what render and the compressor read
(from the first raw event on, see checkpoint.py), and leaves the older lines in the file.

Whatever reaches further back still works, reading those lines from the file: iterating from
the start streams them (nothing is kept), iterating backwards keeps what it read (a scan back
to the last event of some kind is then cheap the next time), an index or a slice reads just
those lines. Correct everywhere, fast where it matters.

Positions count events, not lines: a line the reader skipped (blank, not JSON, not an event)
has no position, exactly as in a full read of the log.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import overload

from scribe.log.codec import EventFormatError, from_record
from scribe.log.events import Event, SessionEvent
from scribe.log.jsonl import LogError, LogRead, read_line
from scribe.log.whole_lines import WholeLines

BACK_BATCH = 256  # events read at a time when iterating backwards into the file
Place = tuple[int, int]  # (byte offset, 1-based line number) of an event's line in the file
UNKNOWN: Place = (-1, -1)


class OlderEvents:
    """Positions 1..count-1 of a log, read from its first `end` bytes on demand. `skipped` are the
    line numbers (1-based) in that span that hold no event; blank lines are found as read."""

    def __init__(self, path: Path, end: int, count: int, skipped: Iterable[int]) -> None:
        self.path, self.end, self.count = path, end, count
        self.skipped = frozenset(skipped)
        # Where each position's line starts, and its number, built when first needed.
        self._offsets: array[int] | None = None
        self._lines: array[int] | None = None

    def stream(self) -> Iterator[Event]:
        """Every older event after the session event, in order, parsed as read and not kept."""
        ignored = LogRead()
        with self.path.open("rb") as fh:
            lines = WholeLines(fh, 0, self.end)
            for number, (_, raw) in enumerate(lines, start=1):
                if number == 1:
                    continue  # the session event, which the EventLog holds
                event = read_line(ignored, number, raw)
                if event is not None:
                    yield event

    def read(self, first: int, last: int) -> list[Event]:
        """Positions first..last-1 (within 1..count-1)."""
        offsets = self._index()
        out: list[Event] = []
        with self.path.open("rb") as fh:
            fh.seek(offsets[first])
            for position in range(first, last):
                if fh.tell() != offsets[position]:
                    fh.seek(offsets[position])
                raw = fh.readline().rstrip(b"\n")
                try:
                    out.append(from_record(json.loads(raw)))
                except (json.JSONDecodeError, UnicodeDecodeError, EventFormatError):
                    raise LogError(f"{self.path} changed on disk while this session had it open "
                                   f"(line at byte {offsets[position]})") from None
        return out

    def places(self, first: int, last: int) -> list[Place]:
        """Where the lines of positions first..last-1 (within 1..count-1) are in the file."""
        offsets = self._index()
        assert self._lines is not None
        return list(zip(offsets[first:last], self._lines[first:last], strict=True))

    def _index(self) -> array[int]:
        """Where each position's line starts: one pass over the newlines of the span, no parsing
        (the lines that hold no event are known from when the log was first read)."""
        if self._offsets is None:
            offsets, numbers = array("q", [0]), array("q", [1])  # position 0: the session event
            with self.path.open("rb") as fh:
                for number, (offset, raw) in enumerate(WholeLines(fh, 0, self.end), start=1):
                    if number > 1 and number not in self.skipped and raw and not raw.isspace():
                        offsets.append(offset)
                        numbers.append(number)
            if len(offsets) != self.count:
                raise LogError(f"{self.path} changed on disk while this session had it open "
                               f"({len(offsets)} events where {self.count} were)")
            self._offsets, self._lines = offsets, numbers
        return self._offsets


class EventLog(Sequence[Event]):
    """All events of one log by position; positions `start` on are in memory."""

    def __init__(self, header: SessionEvent, recent: list[Event], places: list[Place], start: int = 0,
                 older: OlderEvents | None = None, older_bound: int = -1) -> None:
        assert start == 0 or older is not None, "events before `start` need the file they are in"
        assert start > 0 or (recent and recent[0] is header), "position 0 is the session event"
        assert len(places) == len(recent)
        self.header = header
        self._recent = recent
        self._places = places  # where each recent event's line is in the file
        self._start = start
        self._older = older
        # No event before `start` has a seq above this (it is what was observed when they were
        # let go of): asking for what follows a seq at least this high needs only the memory.
        self._older_bound = older_bound

    @classmethod
    def of(cls, events: list[Event]) -> EventLog:
        """Events held in memory whole, not known to be lines of a file (tests, benchmarks)."""
        header = events[0]
        assert isinstance(header, SessionEvent)
        return cls(header, list(events), [UNKNOWN] * len(events))

    @property
    def start(self) -> int:
        """The first position held in memory."""
        return self._start

    def __len__(self) -> int:
        return self._start + len(self._recent)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            first, last, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(first, last, step)]
            if first >= last:
                return []
            if first >= self._start:
                return self._recent[first - self._start:last - self._start]
            return self._before(first, min(last, self._start)) + self._recent[:max(0, last - self._start)]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        if position >= self._start:
            return self._recent[position - self._start]
        return self._before(position, position + 1)[0]

    def _before(self, first: int, last: int) -> list[Event]:
        """Positions first..last-1, all before `start`."""
        head: list[Event] = [self.header] if first == 0 else []
        first = max(first, 1)
        assert self._older is not None
        return head + (self._older.read(first, last) if first < last else [])

    def __iter__(self) -> Iterator[Event]:
        if self._start:
            assert self._older is not None
            yield self.header
            yield from self._older.stream()
        yield from self._recent  # a list iterator sees events appended meanwhile

    def __reversed__(self) -> Iterator[Event]:
        position = len(self) - 1
        while position >= 0:
            if position < self._start:
                self._keep_back(max(0, self._start - BACK_BATCH))
            yield self._recent[position - self._start]
            position -= 1

    def _keep_back(self, first: int) -> None:
        """Hold positions first..start-1 in memory too (iterating backwards reached them)."""
        kept = self._before(first, self._start)
        assert self._older is not None
        places = ([(0, 1)] if first == 0 else []) + self._older.places(max(first, 1), self._start)
        self._recent[:0] = kept
        self._places[:0] = places
        self._start = first

    def append(self, event: Event, place: Place = (-1, -1)) -> None:
        self._recent.append(event)
        self._places.append(place)

    def place_of(self, position: int) -> Place:
        """Where the line of a position held in memory is: (byte offset, line number), or
        (-1, -1) for an event not known to be a line of the file."""
        return self._places[position - self._start]

    def after_seq(self, seq: int) -> Sequence[Event]:
        """The events whose seq is above `seq`: from memory when no older event can be one (the
        raw tail, what render and the compressor ask for, always is), a slice when seqs match
        positions; else a view that reads the file as it is iterated."""
        if self._start and seq < self._older_bound:
            return _After(self, seq)
        first = seq + 1 - self._start
        recent = self._recent
        if 0 <= first < len(recent) and recent[first].seq == seq + 1 and (first == 0 or recent[first - 1].seq == seq):
            return recent[first:]
        if first >= len(recent) and (not recent or recent[-1].seq <= seq):
            return []
        return [e for e in recent if e.seq > seq]


class _After(Sequence[Event]):
    """The events of a log whose seq is above `seq`, found by streaming it when iterated (nothing
    kept); made a list only if something takes its length or an item."""

    def __init__(self, events: EventLog, seq: int) -> None:
        self._events, self._seq = events, seq
        self._made: list[Event] | None = None

    def __iter__(self) -> Iterator[Event]:
        if self._made is not None:
            yield from self._made
            return
        yield from (e for e in self._events if e.seq > self._seq)

    def _list(self) -> list[Event]:
        if self._made is None:
            self._made = list(self)
        return self._made

    def __len__(self) -> int:
        return len(self._list())

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        return self._list()[index]
