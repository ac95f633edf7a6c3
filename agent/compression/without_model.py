"""Compressing without a model, composed into the Compressor (compressor.py): when the observer's answer
is unusable (backed off, said once when it keeps happening) and the prompt must still shrink,
and for a request already refused for its size, where asking a model first would cost a call
the window may not even hold. What it writes is an observation like any other, its model
"extractive" (memory/extract.py); `recall` reads the events back."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from scribe.agent.compression.sizes import Sizes
from scribe.agent.protocol import AgentEvent, Compressed, Notice
from scribe.agent.session.session import SessionLike
from scribe.context.compressions import replaced_raw
from scribe.context.tokens import estimate_text
from scribe.log.chunks import tail_after
from scribe.log.events import ErrorEvent, Event, ObservationEvent, UserEvent
from scribe.log.health import refusals_in_a_row
from scribe.memory.extract import EXTRACTIVE_MODEL, NothingToExtract, extractive_stub
from scribe.memory.observer import Span, UnusableAnswer, choose_span
from scribe.memory.reflector import BACKOFF_GROWTH
from scribe.memory.sizing import require_smaller

OBSERVE_FAILED_KIND = "observe_backoff"
# After this many observer answers refused in a row, the person is told plainly, once.
STALLED_AFTER = 3


class WithoutModel:
    """Model-free summaries, from the figures `sizes` keeps."""

    def __init__(self, sizes: Sizes) -> None:
        self.sizes = sizes

    def observer_failed(self, session: SessionLike, exc: Exception, whole: Span, raw: Sequence[Event],
                         needed: bool) -> Iterator[AgentEvent]:
        size = self.sizes.estimator.total(raw)
        session.append(ErrorEvent, kind=OBSERVE_FAILED_KIND, message=f"observation failed: {exc}",
                       until_tokens=int(size * BACKOFF_GROWTH), purpose="observer")
        stalled = refusals_in_a_row(session.events, OBSERVE_FAILED_KIND, ObservationEvent) == STALLED_AFTER
        if needed:
            yield from self.extract(session, whole, raw, f"the observer's answer was unusable ({exc})")
            size_now = (f"the prompt is now ~{self.sizes.context(session).total:,} tokens, kept in bounds by "
                        "model-free summaries")
        else:
            yield Notice(f"memory: observation not used ({exc}); the events stay raw, and observing is tried "
                         "again when the log has grown")
            size_now = (f"the prompt is now ~{self.sizes.context(session).total:,} tokens and grows with every "
                        "call until an observation is kept")
        if stalled:
            yield Notice(f"memory: observer answers refused {STALLED_AFTER} times in a row (last: {exc}); "
                         f"{size_now} (`scribe log stats` shows each reason)")

    def compress_model_free(self, session: SessionLike) -> Iterator[AgentEvent]:
        """Compress now without a model: every raw event before the current turn's message
        becomes one extractive observation. For a request already
        refused for its size (overflow recovery), where asking a model first would cost a call
        the window may not even hold. Nothing is appended when nothing can be compressed."""
        chunks, observed_to = self.sizes.update(session)
        raw = tail_after(session.events, max(observed_to, 0))
        last_user = max((i for i, e in enumerate(raw) if isinstance(e, UserEvent)), default=0)
        # No floor: the request did not fit, so everything before the current message may go.
        span = choose_span(raw[:last_user], self.sizes.estimator, keep_tokens=0) if last_user else None
        if span is None:
            return
        yield from self.extract(session, span, raw, "asked for without a model")

    def extract(self, session: SessionLike, span: Span, raw: Sequence[Event], why: str) -> Iterator[AgentEvent]:
        """The model-free observation of `span` (of the raw events `raw`), logged like any other
        (model "extractive")."""
        chosen = [e for e in raw if span.seq_from <= e.seq <= span.seq_to]
        replaced = sum(self.sizes.estimator.of(e) for e in chosen)  # uncalibrated, as chunk sizes are
        try:
            text = extractive_stub(chosen, replaced)
            size = require_smaller(text, replaced, "model-free summary")
        except (NothingToExtract, UnusableAnswer) as exc:
            yield Notice(f"memory: {why}; {exc}, so it stays raw")
            return
        made = session.append(ObservationEvent, text=text, seq_from=span.seq_from, seq_to=span.seq_to,
                              tokens=estimate_text(text), model=EXTRACTIVE_MODEL, via="extractive")
        yield Notice(f"memory: {why}; seq {span.seq_from}-{span.seq_to} summarised without a model "
                     f"(`recall` reads them back)")
        yield Compressed("observation", span.tokens, int(size * self.sizes.estimator.factor), span.seq_from, span.seq_to,
                         made.seq, sum(1 for e in chosen if replaced_raw(e)), model_free=True)
