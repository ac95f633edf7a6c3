"""Reopening a session: from its checkpoint and the lines after it, or from the whole log.

The checkpoint (`<id>.checkpoint`, beside the log) is a cache derived from the log: the state
render and the compressor need (the chunk index), what the rest of scribe needs of the whole
log (the digest), the problems met reading it, the byte offset it covers with a sha256 of those
bytes, and where the events worth holding in memory begin. Reopening checks the fingerprint,
parses only the lines from that point on, and folds the lines the checkpoint does not cover (a
crash after it was written, an older scribe that appended) into the state. Missing, stale
(the log was cut, rewritten or replaced), truncated, garbage or another session's: the log is
read whole, streaming, and the checkpoint written anew. Never an error, never the truth.

Held in memory from a reopen: the events from the first one render shows raw (everything after
the last observed seq) or the last model answer, whichever is earlier (pairing looks for the
last answer's tool calls), up to RAW_HELD_BYTES of their lines. Everything before is in the file
(eventlog.EventLog). A raw tail longer than that (a log never compressed) is held from where
those bytes begin, and the raw events before are named in `Reopened.unheld` for the opener to
summarise (agent/session/unheld.py): memory stays bounded however long the log.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.log.chunks import ChunkIndex
from scribe.log.codec import EventFormatError
from scribe.log.digest import LogDigest
from scribe.log.eventlog import EventLog, OlderEvents, Place
from scribe.log.events import AssistantEvent, Event, SessionEvent
from scribe.log.jsonl import LogProblem, LogRead, read_line, torn_problem
from scribe.log.private import write_private
from scribe.log.whole_lines import WholeLines, hash_prefix

# 2: the digest holds no usage rows (the index sums them); chunks are named by their lines' offsets.
FORMAT = 2
# Bytes of log lines a reopen holds as events at most (some four times as much memory): past
# this, the oldest raw events stay in the file and the opener summarises them.
RAW_HELD_BYTES = 24 << 20


def checkpoint_path(log_path: Path) -> Path:
    return log_path.with_suffix(".checkpoint")


@dataclass
class Reopened:
    """A log as read for appending to it."""

    events: EventLog
    chunks: ChunkIndex
    digest: LogDigest
    problems: list[LogProblem]  # every line skipped, in file order
    last_seq: int  # the highest seq of any line, skipped ones too
    size: int  # bytes of whole lines (a torn tail is not counted)
    torn_tail: bytes
    lines: int  # whole lines
    hasher: Any  # sha256 of the first `size` bytes, to be carried on as lines are appended
    from_checkpoint: bool
    # The seqs (first, last) of raw events left in the file, not held, because the raw tail
    # passed RAW_HELD_BYTES: the opener compresses them before anything renders (None: none).
    unheld: tuple[int, int] | None = None


class NotASessionLog(Exception):
    """The log's first line is not a session event: it cannot be reopened."""


def reopen(log_path: Path) -> Reopened:
    """Read a log to append to it, from its checkpoint when that still describes it. Raises
    OSError when the log cannot be read, NotASessionLog when it does not begin with a session."""
    saved = load_checkpoint(checkpoint_path(log_path))
    with log_path.open("rb") as fh:
        if saved is not None:
            reopened = _from_checkpoint(log_path, fh, saved)
            if reopened is not None:
                return reopened
        return _from_scratch(log_path, fh)


# -- the checkpoint on disk -------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    session_id: str
    offset: int  # the bytes covered: whole lines from the start of the log
    fingerprint: str  # sha256 of those bytes
    lines: int  # whole lines in them
    events: int  # events in them (positions 0..events-1)
    last_seq: int
    problems: list[LogProblem]  # the lines in them that were skipped
    keep_offset: int  # where the events held in memory on reopening begin (a line start)
    keep_line: int  # that line's number
    keep_position: int  # that event's position
    chunks: dict[str, Any]
    digest: dict[str, Any]


def load_checkpoint(path: Path) -> Checkpoint | None:
    """The checkpoint at `path`, or None: missing, unreadable or not one this scribe wrote."""
    try:
        state = json.loads(path.read_bytes())
        if not isinstance(state, dict) or state.get("format") != FORMAT:
            return None
        problems = [LogProblem(int(line), str(message), str(kind)) for line, message, kind in state["problems"]]
        return Checkpoint(str(state["session_id"]), int(state["offset"]), str(state["fingerprint"]),
                          int(state["lines"]), int(state["events"]), int(state["last_seq"]), problems,
                          int(state["keep_offset"]), int(state["keep_line"]), int(state["keep_position"]),
                          dict(state["chunks"]), dict(state["digest"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_checkpoint(path: Path, checkpoint: Checkpoint) -> None:
    """Replace the checkpoint atomically (a reader sees the old one or the new one, whole). Not
    fsynced: after a crash of the machine, whatever is there is checked against the log anyway.
    Raises OSError (a full disk): the caller decides whether a missing cache matters."""
    state = {"format": FORMAT, "session_id": checkpoint.session_id, "offset": checkpoint.offset,
             "fingerprint": checkpoint.fingerprint, "lines": checkpoint.lines, "events": checkpoint.events,
             "last_seq": checkpoint.last_seq, "problems": [[p.line, p.message, p.kind] for p in checkpoint.problems],
             "keep_offset": checkpoint.keep_offset, "keep_line": checkpoint.keep_line,
             "keep_position": checkpoint.keep_position, "chunks": checkpoint.chunks, "digest": checkpoint.digest}
    write_private(path, json.dumps(state, ensure_ascii=False, separators=(",", ":")))


def keep_from(events: EventLog, observed_to: int) -> int:
    """The first position worth holding in memory when the log is next reopened: the first raw
    event (seq above `observed_to`) or the last model answer, whichever is earlier, and never
    before what is held now. Every event before it has a seq at most `observed_to`."""
    end = len(events)
    first_raw = next((p for p in range(events.start, end) if events[p].seq > observed_to), end)
    last_answer = next((p for p in range(end - 1, events.start - 1, -1) if isinstance(events[p], AssistantEvent)),
                       end)
    return min(first_raw, last_answer)


def make_checkpoint(events: EventLog, chunks: ChunkIndex, digest: LogDigest, problems: list[LogProblem], *,
                    size: int, lines: int, fingerprint: str, last_seq: int) -> Checkpoint | None:
    """The checkpoint of a log of `size` bytes in `lines` whole lines, whose every event is in
    `events` and folded into `digest`; None when where to begin holding events on reopening is
    not known (events not read from or written to the file)."""
    chunks.update(events)
    position = keep_from(events, chunks.observed_to)
    offset, line = events.place_of(position) if position < len(events) else (size, lines + 1)
    chunk_state = chunks.to_state()
    if offset < 0 or chunk_state is None:
        return None
    return Checkpoint(events.header.id, size, fingerprint, lines, len(events), last_seq, list(problems),
                      offset, line, position, chunk_state, digest.to_state())


# -- reopening ---------------------------------------------------------------------------------


def _from_checkpoint(log_path: Path, fh: Any, saved: Checkpoint) -> Reopened | None:
    """The log from its checkpoint, or None when the checkpoint does not describe it."""
    hasher = hashlib.sha256()
    if os.fstat(fh.fileno()).st_size - saved.keep_offset > RAW_HELD_BYTES:
        return None  # more than a reopen holds: read whole, which lets go of the oldest of it
    found = _valid(fh, saved, hasher)
    if found is None:
        return None
    header, digest = found
    try:
        chunks = ChunkIndex.from_state(saved.chunks, lambda offset: _event_at(fh, offset, saved.offset))
    except (KeyError, TypeError, ValueError, EventFormatError):
        return None
    if chunks.seen != saved.events:
        return None
    read = LogRead(last_seq=saved.last_seq)
    read.problems = [p for p in saved.problems if p.line < saved.keep_line]
    recent: list[Event] = []
    places: list[Place] = []
    lines = WholeLines(fh, saved.keep_offset)
    number = saved.keep_line - 1
    for offset, raw in lines:
        number += 1
        if offset >= saved.offset:
            hasher.update(raw + b"\n")
        event = read_line(read, number, raw) if number > 1 else header
        if event is None:
            continue
        if offset >= saved.offset:
            digest.add(event)  # a line the checkpoint does not cover; the chunk index reads it later
        recent.append(event)
        places.append((offset, number))
    if lines.torn:
        read.problems.append(torn_problem(number + 1))
    if saved.keep_position == 0:
        if not recent or recent[0] is not header:
            return None
        events = EventLog(header, recent, places)
    else:
        skipped = [p.line for p in saved.problems if p.line < saved.keep_line]
        events = EventLog(header, recent, places, saved.keep_position,
                          OlderEvents(log_path, saved.keep_offset, saved.keep_position, skipped),
                          older_bound=int(saved.chunks["observed_to"]))
    if len(events) != digest.events:
        return None
    return Reopened(events, chunks, digest, read.problems, read.last_seq, lines.end, lines.torn, number, hasher,
                    from_checkpoint=True)


def _valid(fh: Any, saved: Checkpoint, hasher: Any = None) -> tuple[SessionEvent, LogDigest] | None:
    """The log's session event and the checkpoint's digest, when the checkpoint describes the
    log: the bytes it covers are still there, unchanged, and begin with the same session. The
    hash of those bytes is left in `hasher`."""
    hasher = hasher if hasher is not None else hashlib.sha256()
    if hash_prefix(fh, saved.offset, hasher) != saved.offset or hasher.hexdigest() != saved.fingerprint:
        return None  # the log was cut, rewritten or replaced since: a stale checkpoint
    fh.seek(0)
    header = _header(fh.readline())
    if header is None or header.id != saved.session_id or saved.keep_offset > saved.offset:
        return None
    try:
        digest = LogDigest.from_state(saved.digest)
    except (KeyError, TypeError, ValueError):
        return None
    return (header, digest) if digest.events == saved.events else None


def _from_scratch(log_path: Path, fh: Any) -> Reopened:
    """Every line of the log, streamed: folded into a fresh chunk index and digest, and only the
    events worth holding kept (see keep_from), so memory grows with the raw tail, not the log."""
    hasher = hashlib.sha256()
    read = LogRead()
    chunks, digest = ChunkIndex(), LogDigest()
    kept: deque[tuple[int, Place, Event, int]] = deque()  # (position, place, event, bytes of its line)
    held = 0  # bytes of the lines of the events in `kept`
    let_go = -1  # the highest seq let go of for want of room (RAW_HELD_BYTES)
    header: SessionEvent | None = None
    last_answer = -1
    lines = WholeLines(fh, 0, hasher=hasher)
    number = 0
    for offset, raw in lines:
        number += 1
        event = read_line(read, number, raw)
        if event is None:
            continue
        if header is None:
            if not isinstance(event, SessionEvent):
                raise NotASessionLog(f"{log_path} does not begin with a session event; it cannot be continued")
            header = event
        position = digest.events
        chunks.add(event, offset)
        digest.add(event)
        if isinstance(event, AssistantEvent):
            last_answer = position
        kept.append((position, (offset, number), event, len(raw)))
        held += len(raw)
        # Let go of what neither render (raw events) nor pairing (the last answer) will read.
        while kept[0][0] < last_answer and kept[0][2].seq <= chunks.observed_to:
            held -= kept.popleft()[3]
        while held > RAW_HELD_BYTES and len(kept) > 1:  # a raw tail too long to hold: the oldest of it
            _, _, gone, size = kept.popleft()
            held -= size
            let_go = max(let_go, gone.seq)
    if header is None:
        raise NotASessionLog(f"{log_path} does not begin with a session event; it cannot be continued")
    if lines.torn:
        read.problems.append(torn_problem(number + 1))
    # Past the bound, held only down to half of it: the summaries the opener appends then fit
    # beside it, and the next reopen (from the checkpoint, or read whole) summarises nothing more.
    while let_go > max(chunks.observed_to, 0) and held > RAW_HELD_BYTES // 2 and len(kept) > 1:
        _, _, gone, size = kept.popleft()
        held -= size
        let_go = max(let_go, gone.seq)
    start, (keep_offset, keep_line), _, _ = kept[0]
    recent = [e for _, _, e, _ in kept]
    places = [p for _, p, _, _ in kept]
    older = None
    if start:
        skipped = [p.line for p in read.problems if p.line < keep_line]
        older = OlderEvents(log_path, keep_offset, start, skipped)
    events = EventLog(header, recent, places, start, older, older_bound=max(chunks.observed_to, let_go))
    observed = max(chunks.observed_to, 0)  # seq 0 is the session event, never observed
    unheld = (observed + 1, let_go) if let_go > observed else None
    return Reopened(events, chunks, digest, read.problems, read.last_seq,
                    lines.end, lines.torn, number, hasher, from_checkpoint=False, unheld=unheld)


def _event_at(fh: Any, offset: int, covered: int) -> Event | None:
    """The event on the line at `offset`, within the first `covered` bytes (those the checkpoint's
    fingerprint vouches for), or None."""
    if not 0 <= offset < covered:
        return None
    fh.seek(offset)
    raw = fh.readline(covered - offset)
    return read_line(LogRead(), 0, raw[:-1]) if raw.endswith(b"\n") else None


def _header(line: bytes) -> SessionEvent | None:
    event = read_line(LogRead(), 1, line.rstrip(b"\n"))
    return event if isinstance(event, SessionEvent) else None
