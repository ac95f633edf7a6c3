"""The Compressor's side of the context window (model/window.py): the window of the session's
model as far as it is known, the thresholds in force within it, what a refusal for size teaches,
and compressing as hard as needed until a request fits. A base of agent/compress.Compressor,
kept apart so each module reads at once."""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from typing import TYPE_CHECKING

from scribe.context.chunks import Chunk
from scribe.context.render import current_model
from scribe.context.tokens import TokenEstimator, fixed_tokens
from scribe.log.events import ContextWindowEvent, Event
from scribe.memory.observer import Span, choose_span
from scribe.model.window import ContextWindow, Limits, Overflow, limits
from scribe.settings.values import Settings

from .protocol import AgentEvent
from .session import Session, session_window

if TYPE_CHECKING:
    from .compress import ContextSize

# Rounds of observing and reflecting one shrink_to may make (each observes what the side-call
# limit lets one observer call read).
SHRINK_ROUNDS = 6


class WindowRoom:
    """What the Compressor does for the window; it provides the rest (observe, reflect, ...)."""

    settings: Settings
    estimator: TokenEstimator

    def _update(self, session: Session) -> tuple[list[Chunk], int]:
        raise NotImplementedError

    def _raw(self, session: Session, observed_to: int) -> Sequence[Event]:
        raise NotImplementedError

    def context(self, session: Session) -> ContextSize:
        raise NotImplementedError

    def observe(self, session: Session, *, force: bool = False, span: Span | None = None,
                needed: bool = False, keep_from: int | None = None) -> Iterator[AgentEvent]:
        raise NotImplementedError

    def reflect(self, session: Session) -> Iterator[AgentEvent]:
        raise NotImplementedError

    def window(self, session: Session) -> ContextWindow | None:
        """The context window of the session's current model, as far as it is known."""
        self._update(session)
        return session_window(session, self.settings.context_tokens)

    def limits(self, session: Session) -> Limits:
        """The thresholds in force: the configured ones, lowered to shares of the window."""
        s = self.settings
        return limits(self.window(session), observe=s.observe_tokens, reflect=s.reflect_tokens,
                      side_call=s.side_call_tokens, max_tokens=s.max_tokens,
                      fixed=int(fixed_tokens(session.header) * self.estimator.factor))

    def learn_window(self, session: Session, tokens: int, source: str) -> bool:
        """Record a window the server reported or a refusal named, if it is news; True if it was."""
        known = self.window(session)
        if known is not None and known.tokens == tokens:
            return False
        session.append(ContextWindowEvent, tokens=tokens, source=source,
                       model=current_model(session.events, session.chunks))
        return True

    def after_overflow(self, session: Session, overflow: Overflow, request_estimate: int) -> int:
        """A request was refused for its size: learn the window it named and, from the size it
        named, this session's tokens per estimate. Returns the most the next request may hold."""
        self.learn_window(session, overflow.window, "error")
        if overflow.requested:
            self.estimator.calibrate(request_estimate, overflow.requested)
        prompt = self.limits(session).prompt
        return prompt if prompt is not None else overflow.window

    def shrink_to(self, session: Session, budget: int, *, keep_from: int) -> Generator[AgentEvent, None, bool]:
        """Compress now, as hard as needed, until the next request is estimated within `budget`
        tokens: observe every raw event before seq `keep_from` (the retention floor and the
        backoffs do not apply), then reflect the observations. True when it fits. The raw log is
        never touched; what compression cannot do is left to the caller."""
        for _ in range(SHRINK_ROUNDS):
            size = self.context(session)
            if size.total <= budget:
                return True
            _, observed_to = self._update(session)
            earlier = [e for e in self._raw(session, max(observed_to, 0)) if e.seq < keep_from]
            span = choose_span(earlier, self.estimator, keep_tokens=0) if earlier else None
            if span is not None:
                # needed: when no model answer is usable, a model-free summary stands in
                yield from self.observe(session, span=span, needed=True)
            if self.context(session).observations > self.limits(session).reflect:
                yield from self.reflect(session)  # past the threshold: condensed without a model if need be
            if self.context(session).total >= size.total:
                break  # no answer made it smaller: nothing more to gain by asking again
        return self.context(session).total <= budget

    def own_size(self, session: Session, since: int) -> int:
        """Estimated tokens of a request holding only the fixed prefix and the raw events from
        seq `since` on: the least a request of this turn can be, whatever is compressed."""
        _, observed_to = self._update(session)
        own = [e for e in self._raw(session, max(observed_to, 0)) if e.seq >= since]
        return int(fixed_tokens(session.header) * self.estimator.factor) + self.estimator.total(own)
