"""What each compression folded, read from the log: an observation with the raw events of its
span, a reflection with the chunks it condensed; the tokens before and after, and the seqs
`recall` reads back exactly. Nothing is lost by compressing (the log keeps every event), but a
person should see what a summary stands for, line by line beside the events it replaced.

Pure: events in, one record per compression out, streamed. The raw events not yet covered are
held until the observation that covers them comes (the raw tail, never the whole log), and of
each chunk only what a later reflection needs. The tokens before are the estimates `scribe log
stats` sums for its raw tokens (context/tokens.event_tokens), so the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from scribe.context.tokens import event_tokens
from scribe.log.events import (
    EXTRACTIVE_MODEL,
    Event,
    ObservationEvent,
    ReflectionEvent,
    UsageEvent,
    UserEvent,
)


def replaced_raw(event: Event) -> bool:
    """Whether an event in an observation's span is one it replaced: whatever a prompt held raw.
    A usage event is a call's bill, never part of a prompt, and an earlier chunk inside the span
    was never raw."""
    return not isinstance(event, UsageEvent | ObservationEvent | ReflectionEvent)


@dataclass(frozen=True)
class Stretch:
    """Replaced events of one turn (a user event starts one), and the seqs that bring them back."""

    events: tuple[Event, ...]

    @property
    def seq_from(self) -> int:
        return self.events[0].seq

    @property
    def seq_to(self) -> int:
        return self.events[-1].seq


@dataclass(frozen=True)
class Folded:
    """One compression: the chunk it made and what that chunk took the place of."""

    chunk: ObservationEvent | ReflectionEvent
    # An observation's: the raw events of its span (replaced_raw). A reflection's: the chunks it
    # condensed that the log holds, in log order.
    replaced: tuple[Event, ...]
    tokens_before: int  # estimated: of the raw events, or the chunks' own tokens
    # The first and last seq of the raw events it stands for (`recall` reads them back whole);
    # None for a reflection whose chunks the events given did not hold.
    covers: tuple[int, int] | None

    @property
    def kind(self) -> Literal["observation", "reflection"]:
        return "observation" if isinstance(self.chunk, ObservationEvent) else "reflection"

    @property
    def tokens_after(self) -> int:
        return self.chunk.tokens

    @property
    def model_free(self) -> bool:
        """Made without a model (memory/extract.py): no model answer was usable."""
        return self.chunk.model == EXTRACTIVE_MODEL

    def stretches(self) -> list[Stretch]:
        """An observation's replaced events turn by turn; a reflection's chunks one by one."""
        if self.kind == "reflection":
            return [Stretch((chunk,)) for chunk in self.replaced]
        runs: list[list[Event]] = []
        for event in self.replaced:
            if not runs or isinstance(event, UserEvent):
                runs.append([])
            runs[-1].append(event)
        return [Stretch(tuple(run)) for run in runs]


def compressions(events: Iterable[Event]) -> Iterator[Folded]:
    """Every compression of the log, in the order it was made."""
    waiting: dict[int, Event] = {}  # raw events no observation has covered yet, by seq (the last standing)
    chunks: dict[int, tuple[ObservationEvent | ReflectionEvent, tuple[int, int] | None]] = {}
    for event in events:
        if isinstance(event, ObservationEvent):
            span = [waiting[s] for s in sorted(waiting) if event.seq_from <= s <= event.seq_to]
            for seq in [s for s in waiting if s <= event.seq_to]:
                del waiting[seq]  # covered, or before the span: observations move forward
            chunks[event.seq] = (event, (event.seq_from, event.seq_to))
            yield Folded(event, tuple(e for e in span if replaced_raw(e)), sum(event_tokens(e) for e in span),
                         (event.seq_from, event.seq_to))
        elif isinstance(event, ReflectionEvent):
            condensed = [chunks[s] for s in sorted(event.supersedes) if s in chunks]
            spans = [c for _, c in condensed if c is not None]
            covers = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
            chunks[event.seq] = (event, covers)
            yield Folded(event, tuple(c for c, _ in condensed), sum(c.tokens for c, _ in condensed), covers)
        else:
            waiting[event.seq] = event
