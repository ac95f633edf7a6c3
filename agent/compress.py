"""Memory compression as the agent runs it: when the raw tail or the observations outgrow their
thresholds, or at a turn start when finished turns have paid for observing them (payback.py),
call the observer or reflector model and append what they produce.

Checked before every model call, so a long tool-only turn is compressed like any other. All
state that decides what happens next (what is observed, backoffs after failures) is read from
the log, so a restarted process behaves as the one before it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scribe.memory.answer import Answer
from scribe.context.budget import InputBudget
from scribe.context.chunks import Chunk, tail_after
from scribe.log.events import ErrorEvent, Event, ObservationEvent, ReflectionEvent, UsageEvent
from scribe.log.health import refusals_in_a_row
from scribe.memory.observer import (
    OBSERVATIONS_SHOWN,
    OBSERVER_MAX_TOKENS,
    OBSERVER_SYSTEM,
    Span,
    UnusableAnswer,
    choose_span,
    clip_span,
    event_line,
    observer_input,
    read_observer_answer,
)
from scribe.memory.reflector import (
    BACKOFF_GROWTH,
    BACKOFF_KIND,
    INPUT_FRAMING_TOKENS,
    REFLECT_ATTEMPTS,
    REFLECTOR_SYSTEM,
    ReflectPlan,
    chunk_size,
    plan_reflection,
    read_reflection,
    reflector_input,
)
from scribe.context.render import CACHE_TTL_S, Request, current_model
from scribe.context.tokens import TokenEstimator, estimate_text, fixed_tokens

from .config import Settings
from .errors import ModelError
from .model import CallResult, ModelClient
from .payback import Rates, paid_off, reflection_paid_off, turn_start
from .protocol import AgentEvent, Compressed, Notice
from .session import Session

OBSERVE_FAILED_KIND = "observe_backoff"
# After this many observer answers refused in a row, the person is told plainly, once.
STALLED_AFTER = 3
OBSERVER_OVERHEAD = estimate_text(OBSERVER_SYSTEM) + 40  # instructions and framing of its input
REFLECTOR_OVERHEAD = estimate_text(REFLECTOR_SYSTEM) + 40


@dataclass(frozen=True)
class ContextSize:
    """Estimated tokens of the next request, by part."""

    fixed: int  # instructions and tools: the same for the whole session
    observations: int
    raw: int  # calibrated against the API's counts

    @property
    def total(self) -> int:
        return self.fixed + self.observations + self.raw


@dataclass
class Compressor:
    model: ModelClient
    settings: Settings
    estimator: TokenEstimator
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    _observer_sizes: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    # -- what the loop calls -------------------------------------------------------------

    def before_call(self, session: Session) -> Iterator[AgentEvent]:
        """Compress if a threshold is passed, early when the cache has gone cold anyway, or, at a
        turn start, when finished turns have cost as much in cache reads as observing them would."""
        events = session.events
        size = self.context(session)
        threshold = self.settings.observe_tokens
        cold = self.settings.compress_when_cold and self._cache_is_cold(events)
        if cold:
            threshold //= 2  # nothing cached to lose: compressing now costs nothing extra
        if size.raw > session.digest.backoff(OBSERVE_FAILED_KIND, ObservationEvent):  # as backoff_until reads it
            if size.raw > threshold:
                yield from self.observe(session)
            elif self.settings.observe_on_payback and (span := self.paid_off_span(session, cold=cold)) is not None:
                yield from self.observe(session, span=span)
                if self.settings.reflect_on_payback:
                    yield from self.reflect(session, plan=self.paid_off_reflection(session))
        yield from self.reflect(session)

    def compress_now(self, session: Session) -> Iterator[AgentEvent]:
        """`/reflect` and `scribe reflect`: observe what the retention floor allows, then reflect."""
        yield from self.observe(session, force=True)
        yield from self.reflect(session, force=True)

    def calibrate(self, request_estimate: int, usage: UsageEvent) -> None:
        """Learn this session's tokens-per-estimate from what the API reported for a request."""
        self.estimator.calibrate(request_estimate, usage.input + usage.cache_read + usage.cache_write)

    def context(self, session: Session) -> ContextSize:
        chunks, observed_to = self._update(session)
        raw = self.estimator.total(tail_after(session.events, observed_to))
        return ContextSize(fixed_tokens(session.header), sum(chunk_size(c) for c in chunks), raw)

    def request_estimate(self, session: Session) -> int:
        """Uncalibrated estimate of a whole agent request, to compare with reported usage."""
        chunks, observed_to = self._update(session)
        return fixed_tokens(session.header) + sum(chunk_size(c) for c in chunks) + sum(
            self.estimator.of(e) for e in tail_after(session.events, observed_to))

    # -- observer ------------------------------------------------------------------------

    def observe(self, session: Session, *, force: bool = False, span: Span | None = None) -> Iterator[AgentEvent]:
        """Observe `span`, or by default the oldest raw events down to the retention floor."""
        events = session.events
        chunks, observed_to = self._update(session)
        raw = tail_after(events, max(observed_to, 0))  # seq 0 is the session header, never observed
        keep = int(self.settings.observe_tokens * self.settings.retention)
        if span is None:
            span = choose_span(raw, self.estimator, keep_tokens=keep)
        if span is None:
            if force:
                yield Notice(f"nothing to summarise yet: the conversation since the last summary "
                             f"(~{self.estimator.total(raw):,} tokens) is short enough to keep word for word "
                             f"(up to ~{keep:,} tokens are always kept so)")
            return
        room = self._budget().room(OBSERVER_SYSTEM)
        shown = min(OBSERVATIONS_SHOWN, room // 4)
        span = clip_span(raw, span, room - shown - 40, self._observer_view, self.estimator)
        chosen = [e for e in raw if span.seq_from <= e.seq <= span.seq_to]
        request = Request.one_shot(self.settings.observer_model, OBSERVER_SYSTEM,
                                   observer_input([c.text for c in chunks], chosen, tail_tokens=shown, room=room),
                                   OBSERVER_MAX_TOKENS)
        try:
            result = self._call(session, request, "observer")
            reading = read_observer_answer(_answer(result))
        except (ModelError, UnusableAnswer) as exc:
            size = self.estimator.total(raw)
            session.append(ErrorEvent, kind=OBSERVE_FAILED_KIND, message=f"observation failed: {exc}",
                           until_tokens=int(size * BACKOFF_GROWTH), purpose="observer")
            yield Notice(f"memory: observation failed ({exc}); will try again when the log has grown")
            if refusals_in_a_row(session.events, OBSERVE_FAILED_KIND, ObservationEvent) == STALLED_AFTER:
                yield Notice(f"memory: observer answers refused {STALLED_AFTER} times in a row (last: {exc}); "
                             f"the prompt is now ~{self.context(session).total:,} tokens and grows with every "
                             "call until an observation is kept (`scribe log stats` shows each reason)")
            return
        extra = {"cut": True} if reading.cut else {}
        event = session.append(ObservationEvent, text=reading.text, seq_from=span.seq_from, seq_to=span.seq_to,
                               tokens=estimate_text(reading.text), model=result.model, **extra)
        if reading.cut:
            yield Notice(f"memory: the observer's answer was cut at max_tokens; kept its {len(reading.lines)} "
                         "complete observations", routine=True)
        yield Compressed("observation", span.tokens, event.tokens, span.seq_from, span.seq_to)

    def paid_off_span(self, session: Session, *, cold: bool = False) -> Span | None:
        """At a turn start: the finished turns whose cache reads have paid for observing them."""
        chunks, observed_to = self._update(session)
        raw = tail_after(session.events, max(observed_to, 0))
        if turn_start(raw) is None:
            return None
        factor = self.estimator.factor
        prompt = [self.estimator.of(e) * factor for e in raw]
        kept = [self.estimator.settled(e) * factor for e in raw]  # behind the new chunk, all are settled
        observer = [self._observer_view(e) * factor for e in raw]
        overhead = OBSERVER_OVERHEAD + min(sum(chunk_size(c) for c in chunks), OBSERVATIONS_SHOWN)
        rates = Rates.of(current_model(session.events, session.chunks), self.settings.observer_model)
        quote = paid_off(raw, prompt, observer, overhead * factor, rates, kept, cold=cold)
        if quote is None:
            return None
        return Span(raw[0].seq, raw[quote.last].seq, self.estimator.total(raw[: quote.last + 1]))

    def _observer_view(self, event: Event) -> int:
        size = self._observer_sizes.get(event.seq)
        if size is None:
            size = self._observer_sizes[event.seq] = estimate_text(event_line(event))
        return size

    # -- reflector -----------------------------------------------------------------------

    def paid_off_reflection(self, session: Session) -> ReflectPlan | None:
        """Just after an observation at a turn start: the oldest chunks whose re-reading has
        paid for condensing them (payback.reflection_paid_off)."""
        chunks, _ = self._update(session)
        if len(chunks) < 3:
            return None
        agent_calls = session.digest.call_seqs("agent")  # from the digest: older events stay on disk
        calls = [len(agent_calls) - bisect_right(agent_calls, c.seq) for c in chunks]
        factor = self.estimator.factor
        rates = Rates.of(current_model(session.events, session.chunks), self.settings.observer_model)
        n = reflection_paid_off([chunk_size(c) * factor for c in chunks], calls, REFLECTOR_OVERHEAD * factor, rates)
        room = self._budget().room(REFLECTOR_SYSTEM)  # the side-call limit holds here too
        while n is not None and n >= 2 and INPUT_FRAMING_TOKENS + sum(chunk_size(c) + 1 for c in chunks[:n]) > room:
            n -= 1
        if n is None or n < 2:
            return None
        return ReflectPlan(chunks[:n], chunks[n:], sum(chunk_size(c) for c in chunks[:n]))

    def reflect(self, session: Session, *, force: bool = False, plan: ReflectPlan | None = None) -> Iterator[AgentEvent]:
        """Reflect when observations pass `reflect_tokens` (or on demand), or carry out `plan`."""
        chunks, _ = self._update(session)
        total = sum(chunk_size(c) for c in chunks)
        given = plan is not None
        room = self._budget().room(REFLECTOR_SYSTEM)
        plan = plan or plan_reflection(chunks, self.settings.reflect_tokens, force=force, room=room)
        if plan is None:
            if force:
                yield Notice("nothing to condense: memory holds fewer than two summaries to merge")
            return
        waiting = session.digest.backoff(BACKOFF_KIND, ReflectionEvent)  # kept as the log grows: no scan back
        if waiting and total <= waiting and not force:
            return
        if given and plan.condense[-1] is chunks[-1]:  # a plan always keeps the newest chunk verbatim
            return
        problems: list[str] = []
        for attempt in range(REFLECT_ATTEMPTS):
            try:
                result = self._call(session, _reflect_request(self.settings, plan, attempt), "reflector")
                text = read_reflection(_answer(result), plan).text
            except UnusableAnswer as exc:
                problems.append(str(exc))
                continue
            except ModelError as exc:
                problems.append(str(exc))
                break
            event = session.append(ReflectionEvent, text=text, supersedes=[c.seq for c in plan.condense],
                                   tokens=estimate_text(text), model=result.model)
            yield Compressed("reflection", plan.tokens, event.tokens, plan.condense[0].seq, plan.condense[-1].seq)
            return
        until = int(total * BACKOFF_GROWTH)
        session.append(ErrorEvent, kind=BACKOFF_KIND, until_tokens=until, purpose="reflector",
                       attempts=len(problems), problems=problems,
                       message=f"reflection refused after {len(problems)} attempts: {problems[-1]}")
        yield Notice(f"memory: reflection did not shrink ({problems[-1]}); waiting until observations "
                     f"pass {until} tokens", routine=True)

    # -- plumbing --------------------------------------------------------------------------

    def _update(self, session: Session) -> tuple[list[Chunk], int]:
        chunks, observed_to = session.chunks.update(session.events)
        self.estimator.settled_before = session.chunks.settled_before
        return chunks, observed_to

    def _budget(self) -> InputBudget:
        return InputBudget(self.settings.side_call_tokens, self.estimator.factor)

    def _call(self, session: Session, request: Request, purpose: str) -> CallResult:
        result = self.model.complete(request)
        session.append(UsageEvent, purpose=purpose, model=result.model, input=result.input,
                       cache_read=result.cache_read, cache_write=result.cache_write, output=result.output,
                       latency_ms=result.latency_ms, message_id=result.message_id)
        return result

    def _cache_is_cold(self, events: Sequence[Event]) -> bool:
        last = next((e for e in reversed(events) if isinstance(e, UsageEvent) and e.purpose == "agent"), None)
        if last is None:
            return False
        try:
            when = datetime.fromisoformat(last.ts.replace("Z", "+00:00"))
        except ValueError:
            return False
        return (self.now() - when).total_seconds() > CACHE_TTL_S


def _reflect_request(settings: Settings, plan: ReflectPlan, attempt: int) -> Request:
    return Request.one_shot(settings.observer_model, REFLECTOR_SYSTEM, reflector_input(plan, attempt),
                            OBSERVER_MAX_TOKENS)


def _answer(result: CallResult) -> Answer:
    return Answer("".join(b.get("text", "") for b in result.content if b.get("type") == "text"), result.stop_reason)
