"""A draft of a session: what compression works on off the main thread.

The log has one writer, the main thread, and compression between turns runs in a thread of its
own (agent/compression/ahead.py) that may still be waiting on a model when the person sends the next
message. So it never touches the session: it works on a draft, which reads as the session did
when the draft was made (its events then, copies of its chunk index and digest) plus what the
draft itself added, and keeps what it would append. At a safe point the main thread takes the
draft into the session (`take`): its events are appended in order, after whatever the session
gained meanwhile.

What the session gained meanwhile changes nothing a draft made, but where it lands: its events
get later seqs (a reflection's `supersedes` of a chunk the draft made follows it), each side
call's usage records the seqs its request did not see (`skip`, so `scribe log prompt --at`
still rebuilds it from the log), and an observation or reflection of something the session
compressed meanwhile is left out (its usage stays: the call was made, and paid for).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from scribe.agent.session.session import Session, usage_fields
from scribe.log.attachments import ImageStore
from scribe.log.events import Event, ObservationEvent, ReflectionEvent, SessionEvent, UsageEvent
from scribe.log.jsonl import new_event
from scribe.model.client import CallResult

E = TypeVar("E", bound=Event)


class DraftEvents(Sequence[Event]):
    """The session's first `base` events, then the draft's own."""

    def __init__(self, events: Sequence[Event], base: int) -> None:
        self._events, self._base = events, base
        self.own: list[Event] = []

    def __len__(self) -> int:
        return self._base + len(self.own)

    @overload
    def __getitem__(self, index: int) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Event]: ...

    def __getitem__(self, index: int | slice) -> Event | Sequence[Event]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        return self._events[index] if index < self._base else self.own[index - self._base]

    def __iter__(self) -> Iterator[Event]:
        for index in range(self._base):
            yield self._events[index]
        yield from self.own

    def __reversed__(self) -> Iterator[Event]:
        yield from reversed(self.own)
        for index in range(self._base - 1, -1, -1):
            yield self._events[index]


@dataclass
class Draft:
    """Session-shaped for the compressor (events, chunks, digest, header, append, record_call,
    sync); nothing it does reaches the session until `take`."""

    session: Session
    base: int = field(init=False)  # how many events the session had
    last_seq: int = field(init=False)  # and the seq of the last of them

    def __post_init__(self) -> None:
        session = self.session
        self.base = len(session.events)
        self.last_seq = session.writer.next_seq - 1
        self.events = DraftEvents(session.events, self.base)
        self.chunks = copy.deepcopy(session.chunks)
        self.digest = copy.deepcopy(session.digest)
        self.appended: list[tuple[type[Event], dict[str, Any]]] = []

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def header(self) -> SessionEvent:
        return self.session.header

    @property
    def images(self) -> ImageStore:
        """The session's image store: only ever added to, and read here, never written."""
        return self.session.images

    def append(self, cls: type[E], **fields: Any) -> E:
        event = new_event(cls, self.last_seq + 1 + len(self.events.own), fields)
        self.events.own.append(event)
        self.digest.add(event)
        self.appended.append((cls, fields))
        return event

    def record_call(self, result: CallResult, purpose: str, **extra: Any) -> UsageEvent:
        return self.append(UsageEvent, **usage_fields(result, purpose, **extra))

    def sync(self) -> None:
        """Nothing to make durable: the draft is memory until it is taken."""


def take(draft: Draft) -> dict[int, int]:
    """Append what `draft` made to its session (the main thread, at a safe point); the seq each
    event appended has in the session, by its seq in the draft (an event left out has none).
    See the module's docstring for what the session's own growth meanwhile changes."""
    session = draft.session
    grown = session.writer.next_seq - 1 - draft.last_seq  # events the session gained meanwhile
    skip = [draft.last_seq + 1, draft.last_seq + grown] if grown else None
    _, observed_to = session.chunks.update(session.events)
    active = {c.seq for c in session.chunks.update(session.events)[0]}
    made: dict[int, int] = {}  # draft seq -> seq in the session
    for own, (cls, fields) in zip(draft.events.own, draft.appended, strict=True):
        fields = dict(fields)
        if grown and cls is UsageEvent and isinstance(fields.get("side_call"), dict):
            call = {**fields["side_call"], "skip": skip}
            if "supersedes" in call:
                call["supersedes"] = [made.get(s, s) for s in call["supersedes"]]
            fields["side_call"] = call
        if cls is ObservationEvent and int(fields["seq_from"]) <= observed_to:
            continue  # the session observed some of it meanwhile
        if cls is ReflectionEvent:
            supersedes = [made.get(s, s) for s in fields["supersedes"]]
            if not all(s in active for s in supersedes):
                continue  # a chunk it condenses is no longer in force
            fields["supersedes"] = supersedes
        event = session.append(cls, **fields)
        made[own.seq] = event.seq
        if isinstance(event, (ObservationEvent, ReflectionEvent)):
            active = {c.seq for c in session.chunks.update(session.events)[0]}
    return made
