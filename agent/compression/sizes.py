"""What compression measures of a session: the chunks in force and the raw tail as requests show
them, the next request's estimated size by part, the window of the session's model as far as it
is known and the thresholds in force within it, what a refusal for size teaches, and whether the
agent's cache has gone cold. Everything the Compressor, its routes and its model-free summaries
decide is decided from these figures; one `Sizes` is shared by them all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scribe.agent.session.session import SessionLike, session_window
from scribe.context.budget import InputBudget
from scribe.context.render import CACHE_TTL_S, current_model
from scribe.context.tokens import TokenEstimator, estimate_text, fixed_tokens
from scribe.log.chunks import Chunk, tail_after
from scribe.log.events import ContextWindowEvent, Event, ObservationEvent, ReflectionEvent, UsageEvent
from scribe.memory.observer import event_line
from scribe.memory.reflector import chunk_size
from scribe.model.window import ContextWindow, Limits, Overflow, limits
from scribe.settings.values import Settings


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
class Sizes:
    settings: Settings
    estimator: TokenEstimator
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    _observer_sizes: dict[int, int] = field(default_factory=dict, init=False, repr=False)

    def context(self, session: SessionLike) -> ContextSize:
        chunks, observed_to = self.update(session)
        raw = self.estimator.total(self.raw(session, observed_to))
        return ContextSize(self.fixed(session), sum(chunk_size(c) for c in chunks), raw)

    def fixed(self, session: SessionLike) -> int:
        """Instructions and tools, as the server counts them: the tools of a server that drops
        them (its model's chat template has none, agent/session/abilities.py) are not counted."""
        self.update(session)
        dropped = session.chunks.no_tools
        tools = dropped is None or dropped.model != current_model(session.events, session.chunks)
        return fixed_tokens(session.header, tools=tools)

    def request_estimate(self, session: SessionLike) -> int:
        """Uncalibrated estimate of a whole agent request, to compare with reported usage."""
        chunks, observed_to = self.update(session)
        return self.fixed(session) + sum(chunk_size(c) for c in chunks) + sum(
            self.estimator.of(e) for e in self.raw(session, observed_to))

    def last_counted(self, session: SessionLike) -> UsageEvent | None:
        """The agent's last call, when the server's count of it still describes the prompt: no
        observation or reflection has changed the prompt since (read back from the log's end),
        and the server counted it (one that reports no input, 0, is not believed)."""
        for event in reversed(session.events):
            if isinstance(event, ObservationEvent | ReflectionEvent):
                return None
            if isinstance(event, UsageEvent) and event.purpose == "agent":
                return event if event.tokens.prompt_tokens > 0 else None
        return None

    def next_request(self, session: SessionLike) -> int:
        """Tokens of the next agent request, as well as they are known: what the server counted
        for the last one (its prompt and its answer) and the estimate of what came after it; the
        estimate throughout when no count describes the prompt (none made yet, or a compression
        has changed it since)."""
        last = self.last_counted(session)
        if last is None:
            return self.context(session).total
        _, observed_to = self.update(session)
        since = [e for e in self.raw(session, observed_to) if e.seq > last.seq]
        return last.tokens.prompt_tokens + last.output + self.estimator.total(since)

    def window(self, session: SessionLike) -> ContextWindow | None:
        """The context window of the session's current model, as far as it is known."""
        self.update(session)
        return session_window(session, self.settings.context_tokens)

    def limits(self, session: SessionLike) -> Limits:
        """The thresholds in force: the configured ones, lowered to shares of the window."""
        s = self.settings
        return limits(self.window(session), observe=s.observe_tokens, reflect=s.reflect_tokens,
                      side_call=s.side_call_tokens, max_tokens=s.max_tokens,
                      fixed=int(self.fixed(session) * self.estimator.factor))

    def learn_window(self, session: SessionLike, tokens: int, source: str) -> bool:
        """Record a window the server reported or a refusal named, if it is news; True if it was."""
        known = self.window(session)
        if known is not None and known.tokens == tokens:
            return False
        session.append(ContextWindowEvent, tokens=tokens, source=source,
                       model=current_model(session.events, session.chunks))
        return True

    def after_overflow(self, session: SessionLike, overflow: Overflow, request_estimate: int) -> int:
        """A request was refused for its size: learn the window it named and, from the size it
        named, this session's tokens per estimate. Returns the most the next request may hold."""
        self.learn_window(session, overflow.window, "error")
        if overflow.requested:
            self.estimator.calibrate(request_estimate, overflow.requested)
        prompt = self.limits(session).prompt
        return prompt if prompt is not None else overflow.window

    def calibrate(self, request_estimate: int, usage: UsageEvent) -> None:
        """Learn this session's tokens-per-estimate from what the API reported for a request."""
        self.estimator.calibrate(request_estimate, usage.tokens.prompt_tokens)

    def fits(self, session: SessionLike) -> bool:
        """Whether the next request, as the log stands, fits the model's window (unknown: yes),
        counted from the server's count of the last request where that still holds."""
        prompt = self.limits(session).prompt
        return prompt is None or self.next_request(session) <= prompt

    def own_size(self, session: SessionLike, since: int) -> int:
        """Estimated tokens of a request holding only the fixed prefix and the raw events from
        seq `since` on: the least a request of this turn can be, whatever is compressed."""
        _, observed_to = self.update(session)
        own = [e for e in self.raw(session, max(observed_to, 0)) if e.seq >= since]
        return int(self.fixed(session) * self.estimator.factor) + self.estimator.total(own)

    def observer_view(self, event: Event) -> int:
        """Estimated tokens of `event` as the observer's input shows it (one line each), kept."""
        size = self._observer_sizes.get(event.seq)
        if size is None:
            size = self._observer_sizes[event.seq] = estimate_text(event_line(event))
        return size

    def update(self, session: SessionLike) -> tuple[list[Chunk], int]:
        """The observation chunks in force and the last seq they cover, brought up to date."""
        chunks, observed_to = session.chunks.update(session.events)
        self.estimator.settled_before = session.chunks.settled_before
        return chunks, observed_to

    def budget(self, session: SessionLike) -> InputBudget:
        """What a side call's input may hold."""
        return InputBudget(self.limits(session).side_call, self.estimator.factor)

    def raw(self, session: SessionLike, observed_to: int) -> Sequence[Event]:
        """The raw tail as requests show it: after the chunks, less what a turn too big for the
        window left out."""
        return session.chunks.shown(tail_after(session.events, observed_to))

    def agent_model(self, session: SessionLike) -> str:
        """The model the agent's calls ask for now."""
        return current_model(session.events, session.chunks)

    def cache_is_cold(self, events: Sequence[Event]) -> bool:
        """Whether the agent's last call is older than the cache's lifetime."""
        last = next((e for e in reversed(events) if isinstance(e, UsageEvent) and e.purpose == "agent"), None)
        if last is None:
            return False
        try:
            when = datetime.fromisoformat(last.ts.replace("Z", "+00:00"))
        except ValueError:
            return False
        return (self.now() - when).total_seconds() > CACHE_TTL_S
