"""What a reopened session holds no more of, so that it opens in bounded memory however long
its log: the raw events a reopen left in the file because the raw tail was too long to hold
(context/checkpoint.RAW_HELD_BYTES: a log that was never compressed), summarised without a
model span by span, and observation chunks in force past what any request holds
(CHUNKS_HELD_TOKENS: a reflector that never answered), condensed without one. Both before
anything renders them.

Each span becomes one extractive observation (memory/extract.py, model "extractive"), as the
compressor writes when no model answer is usable: the person's words, the files and commands,
the errors, and the seq range that `recall` reads back exactly. The spans are read from the log
one at a time and let go of; what they say stays in the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scribe.context.tokens import TokenEstimator, estimate_text
from scribe.log.chunks import Chunk, tail_after
from scribe.log.events import EXTRACTIVE_MODEL, Event, ObservationEvent, ReflectionEvent
from scribe.memory.extract import NothingToExtract, extractive_reflection, extractive_stub
from scribe.memory.reflector import chunk_size
from scribe.tools.textio import plural

if TYPE_CHECKING:
    from scribe.agent.session.session import Session  # which opens with this: imported there

# Estimated tokens of raw events one stub stands for: a gigabyte of raw events (some 250 million
# tokens) becomes about 1,300 stubs, which reflection condenses like any other chunks.
SPAN_TOKENS = 200_000
# Estimated tokens of observation chunks in force a session opens with at most: more than a
# request to any model holds (a log whose observer kept answering and whose reflector never did
# can have hundreds of thousands of chunks). Past it the oldest are condensed without a model.
CHUNKS_HELD_TOKENS = 500_000
REFLECTION_SPAN_TOKENS = 100_000
# Far more than a stub needs to be smaller than what it stands for.
LEAST_SPAN_TOKENS = 2_000


def observe_unheld(session: Session, first: int, last: int) -> str:
    """Summarise the raw events of seqs first..last (all in the file, none held); what to tell
    the person. Every one of them is covered: a last span too small for a stub of its own joins
    the one before it, or when there is none, takes the oldest held events with it."""
    estimator = TokenEstimator()
    pending: tuple[list[Event], int] | None = None  # a full span, written once the next begins
    span: list[Event] = []
    tokens = stubs = 0
    for event in tail_after(session.events, first - 1):  # streamed from the file, not kept
        if event.seq > last and (pending is not None or tokens >= LEAST_SPAN_TOKENS):
            break  # else a few held events join the span, so that a stub can stand for it
        if tokens >= SPAN_TOKENS:
            if pending is not None:
                stubs += _stub(session, *pending)
            pending, span, tokens = (span, tokens), [], 0
        span.append(event)
        tokens += estimator.of(event)
    if pending is not None and tokens < SPAN_TOKENS // 2:
        span, tokens = pending[0] + span, pending[1] + tokens
        pending = None
    if pending is not None:
        stubs += _stub(session, *pending)
    if span:
        stubs += _stub(session, span, tokens)
    session.sync()
    return (f"memory: seq {first}-{last} were too many raw events to hold on reopening; "
            f"{plural(stubs, 'summary', 'summaries')} of them written without a model (`recall` reads them back)")


def _stub(session: Session, span: list[Event], tokens: int) -> int:
    try:
        text = extractive_stub(span, tokens)
    except NothingToExtract:  # a raw tail of fewer tokens than LEAST_SPAN_TOKENS: it stays raw
        return 0
    session.append(ObservationEvent, text=text, seq_from=span[0].seq, seq_to=span[-1].seq,
                   tokens=estimate_text(text), model=EXTRACTIVE_MODEL, via="extractive")
    return 1


def condense_unheld(session: Session) -> str | None:
    """Condense without a model the oldest observation chunks in force past CHUNKS_HELD_TOKENS
    (down to half of it), into reflections of about REFLECTION_SPAN_TOKENS each; what to tell
    the person, or None when the chunks are within the bound. A prompt of more could not be
    sent to any model, and holding it costs memory in proportion to the log."""
    chunks, _ = session.chunks.update(session.events)
    total = sum(chunk_size(c) for c in chunks)
    if total <= CHUNKS_HELD_TOKENS:
        return None
    excess = total - CHUNKS_HELD_TOKENS // 2
    groups: list[list[Chunk]] = [[]]
    taken = tokens = 0
    for chunk in chunks[:-1]:  # the newest chunk stays verbatim, as a reflection keeps it
        if taken >= excess:
            break
        if tokens >= REFLECTION_SPAN_TOKENS:
            groups.append([])
            tokens = 0
        groups[-1].append(chunk)
        tokens += chunk_size(chunk)
        taken += chunk_size(chunk)
    made = 0
    for group in groups:
        made += _condense(session, group)
    session.sync()
    return (f"memory: {plural(len(chunks), 'observation chunk')} held about {total:,} tokens, more than a "
            f"request can hold; the oldest {sum(map(len, groups)):,} condensed without a model into "
            f"{plural(made, 'reflection')} (`recall` reads their events back)")


def _condense(session: Session, group: list[Chunk]) -> int:
    if len(group) < 2:
        return 0
    covers = (min(getattr(c, "seq_from", c.seq) for c in group), max(getattr(c, "seq_to", c.seq) for c in group))
    tokens = sum(chunk_size(c) for c in group)
    try:
        text = extractive_reflection([c.text for c in group], covers, tokens)
    except NothingToExtract:
        return 0
    session.append(ReflectionEvent, text=text, supersedes=[c.seq for c in group], tokens=estimate_text(text),
                   model=EXTRACTIVE_MODEL, via="extractive")
    return 1
