"""Memory compression as the agent runs it: when the raw tail or the observations outgrow their
thresholds, or at a turn start when finished turns have paid for observing them (payback.py),
call the observer or reflector model and append what they produce.

Checked before every model call, so a long tool-only turn is compressed like any other. All
state that decides what happens next (what is observed, backoffs after failures) is read from
the log, so a restarted process behaves as the one before it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from scribe.agent.compression.routes import OBSERVER_OVERHEAD, Routes
from scribe.agent.compression.sizes import ContextSize, Sizes
from scribe.agent.compression.without_model import OBSERVE_FAILED_KIND, WithoutModel
from scribe.agent.protocol import AgentEvent, Compressed, Notice
from scribe.agent.session.session import SessionLike, side_model
from scribe.context.compressions import replaced_raw
from scribe.context.render import Request, current_model
from scribe.context.tokens import TokenEstimator, estimate_text
from scribe.log.events import (
    ErrorEvent,
    ObservationEvent,
    ReflectionEvent,
    UsageEvent,
)
from scribe.memory.answer_tools import OBSERVATIONS_TOOL_NAME, observations_text
from scribe.memory.extract import (
    EXTRACTIVE_MODEL,
    NothingToExtract,
    extractive_reflection,
    model_resting_now,
)
from scribe.memory.observer import (
    OBSERVATIONS_SHOWN,
    Span,
    UnusableAnswer,
    choose_span,
    nothing_to_observe,
    read_observer_answer,
)
from scribe.memory.payback import Rates, paid_off, reflection_paid_off, turn_start
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
)
from scribe.memory.routes import SideCall, build, current_turn_start
from scribe.memory.sizing import reflector_max_tokens, require_smaller
from scribe.model.client import CallResult, ModelClient
from scribe.model.errors import ModelError
from scribe.model.sidecall import side_answer, side_deadline
from scribe.model.window import ContextWindow, Limits, Overflow
from scribe.settings.values import Settings

# Rounds of observing and reflecting one shrink_to may make (each observes what the side-call
# limit lets one observer call read).
SHRINK_ROUNDS = 6
# Between turns, the share of observe_tokens past which the raw tail is compressed ahead.
AHEAD_SHARE = 0.75
REFLECTOR_OVERHEAD = estimate_text(REFLECTOR_SYSTEM) + 40


@dataclass(frozen=True)
class Room:
    """What compressing to make room did: whether the request now fits (by the estimate, and
    the server's count where there is one), whether it is any smaller, and if it does not fit,
    why memory could not make room (the turn's `left_out` event, and `scribe log stats`, say it)."""

    fits: bool
    changed: bool
    why: str = ""


class Compressor:
    """Observes and reflects a session's memory. Composed of what it measures (`sizes`, shared
    with the rest), which route each side call takes (`routes`) and what it writes when no model
    answer is usable (`without_model`)."""

    def __init__(self, model: ModelClient, settings: Settings, estimator: TokenEstimator,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC),
                 cancelled: threading.Event | None = None) -> None:
        self.model, self.settings = model, settings
        # The session's: a side call made before a turn's call stops when the turn is cancelled.
        self.cancelled = cancelled
        self.sizes = Sizes(settings, estimator, now)
        self.routes = Routes(self.sizes, settings)
        self.without_model = WithoutModel(self.sizes)

    @property
    def estimator(self) -> TokenEstimator:
        return self.sizes.estimator

    def detached(self) -> Compressor:
        """A compressor of its own (its estimates and caches apart), for a thread that works on
        a draft of the session (agent/compression/ahead.py) while this one goes on."""
        # Not the session's cancel: a compression between turns is nobody's wait to cancel.
        return Compressor(self.model, self.settings, copy.deepcopy(self.sizes.estimator), self.sizes.now)

    # -- the figures the loop and the front ends read (sizes.py) ----------------------------

    def context(self, session: SessionLike) -> ContextSize:
        return self.sizes.context(session)

    def request_estimate(self, session: SessionLike) -> int:
        return self.sizes.request_estimate(session)

    def last_counted(self, session: SessionLike) -> UsageEvent | None:
        return self.sizes.last_counted(session)

    def next_request(self, session: SessionLike) -> int:
        return self.sizes.next_request(session)

    def fits(self, session: SessionLike) -> bool:
        return self.sizes.fits(session)

    def window(self, session: SessionLike) -> ContextWindow | None:
        return self.sizes.window(session)

    def limits(self, session: SessionLike) -> Limits:
        return self.sizes.limits(session)

    def learn_window(self, session: SessionLike, tokens: int, source: str) -> bool:
        return self.sizes.learn_window(session, tokens, source)

    def after_overflow(self, session: SessionLike, overflow: Overflow, request_estimate: int) -> int:
        return self.sizes.after_overflow(session, overflow, request_estimate)

    def calibrate(self, request_estimate: int, usage: UsageEvent) -> None:
        self.sizes.calibrate(request_estimate, usage)

    def own_size(self, session: SessionLike, since: int) -> int:
        return self.sizes.own_size(session, since)

    def compress_model_free(self, session: SessionLike) -> Iterator[AgentEvent]:
        """Compress now without a model (without_model.py), for a request refused for its size."""
        return self.without_model.compress_model_free(session)

    # -- what the loop calls -------------------------------------------------------------

    def before_call(self, session: SessionLike, *, ahead: bool = False) -> Iterator[AgentEvent]:
        """Compress if a threshold is passed, early when the cache has gone cold anyway, or, at a
        turn start, when finished turns have cost as much in cache reads as observing them would.
        `ahead`: between turns (agent/compression/ahead.py), where a tail a little under the threshold is
        compressed too, since the next message will most likely take it over."""
        events = session.events
        size = self.context(session)
        threshold, cold = self._observe_threshold(session, ahead)
        if size.raw > session.digest.backoff(OBSERVE_FAILED_KIND, ObservationEvent):  # as backoff_until reads it
            if size.raw > threshold:
                # In a turn, the turn's own request and all after it stay raw: the model is answering it.
                keep_from = None if ahead else current_turn_start(events)
                yield from self._observe_below(session, threshold, keep_from)
            elif self.settings.observe_on_payback and (span := self.paid_off_span(session, cold=cold)) is not None:
                yield from self.observe(session, span=span)
                if self.settings.reflect_on_payback:
                    yield from self.reflect(session, plan=self.paid_off_reflection(session))
        yield from self.reflect(session)

    def due(self, session: SessionLike, *, ahead: bool = False) -> bool:
        """Whether `before_call` would compress anything now, by the same tests and without a
        model call: so a front end where a person waits can have it done off their path, and a
        headless run leave it for after its answer (agent/finishing/)."""
        size = self.context(session)
        threshold, cold = self._observe_threshold(session, ahead)
        if size.raw > session.digest.backoff(OBSERVE_FAILED_KIND, ObservationEvent):
            if size.raw > threshold and self._observable(session, None if ahead else
                                                         current_turn_start(session.events)):
                return True
            if self.settings.observe_on_payback and self.paid_off_span(session, cold=cold) is not None:
                return True
        chunks, _ = self.sizes.update(session)
        plan = plan_reflection(chunks, self.limits(session).reflect, room=self.sizes.budget(session).room(REFLECTOR_SYSTEM))
        waiting = session.digest.backoff(BACKOFF_KIND, ReflectionEvent)
        return plan is not None and not (waiting and sum(chunk_size(c) for c in chunks) <= waiting)

    def _observable(self, session: SessionLike, keep_from: int | None) -> bool:
        """Whether `observe` would find a span to observe (by its own choice, before `keep_from`):
        a tail of one long turn past the threshold may all be within the retention floor."""
        _, observed_to = self.sizes.update(session)
        raw = self.sizes.raw(session, max(observed_to, 0))
        keep = int(self.limits(session).observe * self.settings.retention)
        before = raw
        if keep_from is not None:
            before = [e for e in raw if e.seq < keep_from]
            keep = max(0, keep - self.estimator.total(raw[len(before):]))
        return bool(before) and choose_span(before, self.estimator, keep_tokens=keep) is not None

    def _observe_threshold(self, session: SessionLike, ahead: bool) -> tuple[int, bool]:
        """The raw tokens past which the tail is observed now, and whether the cache is cold."""
        threshold = int(self.limits(session).observe * (AHEAD_SHARE if ahead else 1))
        cold = self.settings.compress_when_cold and self.sizes.cache_is_cold(session.events)
        if cold:
            threshold //= 2  # nothing cached to lose: compressing now costs nothing extra
        return threshold, cold

    def _observe_below(self, session: SessionLike, threshold: int, keep_from: int | None) -> Iterator[AgentEvent]:
        """Observe until the raw tail is under `threshold` or nothing more can be observed. One
        observer call reads at most the side-call limit, so it may cover only part of what is
        due; the rest is observed now, not at the next call: the prompt changes after its
        observations once, and the provider's cache is lost once, not again a call later for
        everything (a long paste, say) that the first change had left to evaluate again."""
        for _ in range(SHRINK_ROUNDS):
            before = self.context(session).raw
            yield from self.observe(session, needed=True, keep_from=keep_from)
            after = self.context(session).raw
            if after <= threshold or after >= before:
                return

    def compress_now(self, session: SessionLike, focus: str = "") -> Iterator[AgentEvent]:
        """`/compact [FOCUS]` (`/reflect`, `scribe reflect`): compact now. The oldest raw events
        down to the retention floor are observed, or all of them where the floor would leave
        nothing to observe (a compaction asked for compacts); `focus`, what the person wants kept
        in view, is given to the Observer. Then the observations are reflected."""
        yield from self.observe(session, force=True, focus=focus)
        yield from self.reflect(session, force=True)

    # -- observer ------------------------------------------------------------------------

    def observe(self, session: SessionLike, *, force: bool = False, span: Span | None = None,
                needed: bool = False, keep_from: int | None = None, focus: str = "") -> Iterator[AgentEvent]:
        """Observe `span`, or by default the oldest raw events down to the retention floor, never
        the events from seq `keep_from` on (the current turn's request and what followed it).
        `needed`: the prompt must shrink (a threshold is passed), so when no model answer is
        usable the span is summarised without one (memory/extract.py). `force`: asked for, so
        when the floor leaves nothing to observe, everything raw is. `focus`: for the Observer."""
        chunks, observed_to = self.sizes.update(session)
        raw = self.sizes.raw(session, max(observed_to, 0))  # seq 0 is the session header, never observed
        keep = int(self.limits(session).observe * self.settings.retention)
        before = raw
        if keep_from is not None:
            before = [e for e in raw if e.seq < keep_from]
            keep = max(0, keep - self.estimator.total(raw[len(before):]))  # the turn counts toward the floor
        if span is None and before:
            span = choose_span(before, self.estimator, keep_tokens=keep)
            if span is None and force:
                span = choose_span(before, self.estimator, keep_tokens=0)
        if span is None or span.tokens <= 0:
            # (A span of events the prompt shows nothing of, the window learned or what a server
            # does not offer, is not worth a call: nothing would be smaller, and a refused answer
            # would hold back the observations that are.)
            if force:
                yield Notice(nothing_to_observe(raw, self.estimator, keep) if raw and span is None else
                             "nothing to compact: no conversation since the last summary")
            return
        whole = span  # a summary without a model has no input limit: it covers all of it
        if needed and model_resting_now(session.digest):  # from the digest: no scan back
            yield from self.without_model.extract(session, whole, raw, "the observer's last answers were unusable")
            return
        call = replace(self.routes.observer_call(session, chunks, raw, whole, keep_from), focus=focus)
        span = Span(call.seq_from, call.seq_to, whole.tokens if call.seq_to == whole.seq_to else
                    self.estimator.total([e for e in raw if e.seq <= call.seq_to]))
        chosen = [e for e in raw if span.seq_from <= e.seq <= span.seq_to]
        replaced = sum(self.estimator.of(e) for e in chosen)  # uncalibrated, as chunk sizes are
        try:
            result = self._call(session, build(session.events, call, session.chunks, session.images), call)
            answer, via = side_answer(result, OBSERVATIONS_TOOL_NAME, observations_text)
            if answer.cut:
                raise UnusableAnswer(f"the answer ran past its budget of {call.max_tokens} tokens")
            reading = read_observer_answer(answer)
            size = require_smaller(reading.text, replaced, "observation")
        except (ModelError, UnusableAnswer) as exc:
            yield from self.without_model.observer_failed(session, exc, whole, raw, needed)
            return
        made = session.append(ObservationEvent, text=reading.text, seq_from=span.seq_from, seq_to=span.seq_to,
                              tokens=estimate_text(reading.text), model=result.model, via=via)
        yield Compressed("observation", span.tokens, int(size * self.estimator.factor), span.seq_from, span.seq_to,
                         made.seq, sum(1 for e in chosen if replaced_raw(e)))

    def paid_off_span(self, session: SessionLike, *, cold: bool = False) -> Span | None:
        """At a turn start: the finished turns whose cache reads have paid for observing them."""
        if not session.digest.agent_calls:  # nothing sent yet, so nothing read from the cache
            return None
        chunks, observed_to = self.sizes.update(session)
        raw = self.sizes.raw(session, max(observed_to, 0))
        if turn_start(raw) is None:
            return None
        factor = self.estimator.factor
        prompt = [self.estimator.of(e) * factor for e in raw]
        kept = [self.estimator.settled(e) * factor for e in raw]  # behind the new chunk, all are settled
        observer = [self.sizes.observer_view(e) * factor for e in raw]
        overhead = OBSERVER_OVERHEAD + min(sum(chunk_size(c) for c in chunks), OBSERVATIONS_SHOWN)
        rates = Rates.of(current_model(session.events, session.chunks), side_model(session, self.settings))
        quote = paid_off(raw, prompt, observer, overhead * factor, rates, kept, cold=cold)
        if quote is None:
            return None
        return Span(raw[0].seq, raw[quote.last].seq, self.estimator.total(raw[: quote.last + 1]))

    # -- reflector -----------------------------------------------------------------------

    def paid_off_reflection(self, session: SessionLike) -> ReflectPlan | None:
        """Just after an observation at a turn start: the oldest chunks whose re-reading has
        paid for condensing them (payback.reflection_paid_off)."""
        chunks, _ = self.sizes.update(session)
        if len(chunks) < 3:
            return None
        digest = session.digest  # from the digest: older events stay on disk
        calls = [digest.agent_calls - digest.agent_calls_before.get(c.seq, digest.agent_calls) for c in chunks]
        factor = self.estimator.factor
        rates = Rates.of(current_model(session.events, session.chunks), side_model(session, self.settings))
        n = reflection_paid_off([chunk_size(c) * factor for c in chunks], calls, REFLECTOR_OVERHEAD * factor, rates)
        room = self.sizes.budget(session).room(REFLECTOR_SYSTEM)  # the side-call limit holds here too
        if n is not None:
            held = sum(chunk_size(c) + 1 for c in chunks[:n])
            while n >= 2 and INPUT_FRAMING_TOKENS + held > room:
                n -= 1
                held -= chunk_size(chunks[n]) + 1
        if n is None or n < 2:
            return None
        return ReflectPlan(chunks[:n], chunks[n:], sum(chunk_size(c) for c in chunks[:n]))

    def reflect(self, session: SessionLike, *, force: bool = False, plan: ReflectPlan | None = None) -> Iterator[AgentEvent]:
        """Reflect when observations pass `reflect_tokens` (or on demand), or carry out `plan`."""
        chunks, _ = self.sizes.update(session)
        total = sum(chunk_size(c) for c in chunks)
        given = plan is not None
        # Fewer than two summaries: nothing to merge, whatever the budget (the common case: asked
        # before every call, so it is answered before any budget is worked out).
        if plan is None and len(chunks) >= 2:
            room = self.sizes.budget(session).room(REFLECTOR_SYSTEM)
            plan = plan_reflection(chunks, self.limits(session).reflect, force=force, room=room)
        if plan is None:
            if force:
                yield Notice("nothing to condense: memory holds fewer than two summaries to merge")
            return
        waiting = session.digest.backoff(BACKOFF_KIND, ReflectionEvent)  # kept as the log grows: no scan back
        if waiting and total <= waiting and not force:
            return
        if given and plan.condense[-1] is chunks[-1]:  # a plan always keeps the newest chunk verbatim
            return
        # Past the threshold on its own (not asked for, not a payback plan): the prompt must shrink.
        needed = not force and not given and total > self.settings.reflect_tokens
        if needed and model_resting_now(session.digest, BACKOFF_KIND, ReflectionEvent):
            yield from self._condense(session, plan, "the reflector's last answers were unusable")
            return
        problems: list[str] = []
        factor = self.estimator.factor
        budget = reflector_max_tokens(int(plan.tokens * factor), self.settings.side_call_max_tokens)
        choice = self.routes.route(session, REFLECTOR_OVERHEAD, int((REFLECTOR_OVERHEAD + INPUT_FRAMING_TOKENS + plan.tokens)
                                                               * factor), budget, int(plan.tokens * factor))
        for attempt in range(REFLECT_ATTEMPTS):
            cache = choice.route == "cache"
            call = SideCall("reflector", choice.route, self.sizes.agent_model(session) if cache else side_model(session, self.settings),
                            budget, tool=self.settings.side_call_tools and not cache,
                            supersedes=tuple(c.seq for c in plan.condense), attempt=attempt, quote=choice.recorded())
            try:
                result = self._call(session, build(session.events, call, session.chunks, session.images), call)
                answer, via = side_answer(result, OBSERVATIONS_TOOL_NAME, observations_text)
                text = read_reflection(answer, plan).text
            except UnusableAnswer as exc:
                problems.append(str(exc))
                continue
            except ModelError as exc:
                problems.append(str(exc))
                break
            event = session.append(ReflectionEvent, text=text, supersedes=[c.seq for c in plan.condense],
                                   tokens=estimate_text(text), model=result.model, via=via)
            yield Compressed("reflection", plan.tokens, event.tokens, plan.condense[0].seq, plan.condense[-1].seq,
                             event.seq, len(plan.condense))
            return
        until = int(total * BACKOFF_GROWTH)
        session.append(ErrorEvent, kind=BACKOFF_KIND, until_tokens=until, purpose="reflector",
                       attempts=len(problems), problems=problems,
                       message=f"reflection refused after {len(problems)} attempts: {problems[-1]}")
        if needed:
            yield from self._condense(session, plan, f"the reflector's answers were unusable ({problems[-1]})")
            return
        yield Notice(f"memory: reflection did not shrink ({problems[-1]}); waiting until observations "
                     f"pass {until} tokens", routine=True)

    def _condense(self, session: SessionLike, plan: ReflectPlan, why: str) -> Iterator[AgentEvent]:
        """The model-free reflection of `plan`, logged like any other (model "extractive")."""
        covers = (min(getattr(c, "seq_from", 1) for c in plan.condense),
                  max(getattr(c, "seq_to", c.seq) for c in plan.condense))
        try:
            text = extractive_reflection([c.text for c in plan.condense], covers, plan.tokens)
        except NothingToExtract as exc:
            yield Notice(f"memory: {why}; {exc}")
            return
        event = session.append(ReflectionEvent, text=text, supersedes=[c.seq for c in plan.condense],
                               tokens=estimate_text(text), model=EXTRACTIVE_MODEL, via="extractive")
        yield Notice(f"memory: {why}; {len(plan.condense)} observation chunks condensed without a model")
        yield Compressed("reflection", plan.tokens, event.tokens, plan.condense[0].seq, plan.condense[-1].seq,
                         event.seq, len(plan.condense), model_free=True)

    def _call(self, session: SessionLike, request: Request, call: SideCall) -> CallResult:
        """One side call, stopped if it outlasts the agent's recent calls (model/sidecall.py), and
        its usage logged with what its request was built from (`scribe log prompt` rebuilds it)."""
        result = self.model.complete(request, deadline_s=side_deadline(session.events), cancelled=self.cancelled)
        session.record_call(result, call.kind, side_call=call.recorded())
        return result

    def shrink_to(self, session: SessionLike, budget: int, *, keep_from: int,
                  short: int = 0) -> Generator[AgentEvent, None, Room]:
        """Compress now, as hard as needed, until the next request is within `budget` tokens:
        observe every raw event before seq `keep_from` (the retention floor and the backoffs do
        not apply), then reflect the observations. `short`: what the estimate fell short of the
        server's count of the request (a refusal names it), added to every estimate here, so an
        estimate that says "it fits" of a request just refused for its size is not believed. The
        raw log is never touched; what compression cannot do is left to the caller, with why."""
        first = self.context(session).total
        for _ in range(SHRINK_ROUNDS):
            size = self.context(session)
            if size.total + short <= budget:
                return Room(True, size.total < first)
            _, observed_to = self.sizes.update(session)
            earlier = [e for e in self.sizes.raw(session, max(observed_to, 0)) if e.seq < keep_from]
            span = choose_span(earlier, self.estimator, keep_tokens=0) if earlier else None
            if span is not None:
                # needed: when no model answer is usable, a model-free summary stands in
                yield from self.observe(session, span=span, needed=True)
            if self.context(session).observations > self.limits(session).reflect:
                yield from self.reflect(session)  # past the threshold: condensed without a model if need be
            if self.context(session).total >= size.total:
                break  # no answer made it smaller: nothing more to gain by asking again
        size = self.context(session)
        if size.total + short <= budget:
            return Room(True, size.total < first)
        _, observed_to = self.sizes.update(session)
        before = sum(self.estimator.of(e) for e in self.sizes.raw(session, max(observed_to, 0)) if e.seq < keep_from)
        left = "everything before this turn is compressed already" if not before else \
            f"~{int(before * self.estimator.factor):,} tokens before this turn stay raw: compressing them made nothing smaller"
        return Room(False, size.total < first,
                    f"{left}; the request is still ~{size.total + short:,} tokens of the {budget:,} it may hold: "
                    f"{size.fixed:,} instructions, {size.observations:,} of observations, {size.raw:,} raw")
