"""Which route each of the Compressor's side calls takes (memory/routes.py), with this session's
figures: the cached prefix the agent's last call left, the next request's estimated size, the
window, and each route's request size. Composed into the Compressor (compressor.py)."""

from __future__ import annotations

from collections.abc import Sequence

from scribe.agent.compression.sizes import ContextSize, Sizes
from scribe.agent.session.session import SessionLike, side_model
from scribe.context.tokens import estimate_text
from scribe.log.chunks import Chunk
from scribe.log.events import Event, ObservationEvent, ReflectionEvent, UsageEvent
from scribe.memory.observer import OBSERVATIONS_SHOWN, OBSERVER_SYSTEM, Span, clip_span
from scribe.memory.payback import OBSERVATION_YIELD
from scribe.memory.reflector import chunk_size
from scribe.memory.routes import RouteChoice, SideCall, choose_route
from scribe.memory.sizing import observer_max_tokens
from scribe.settings.values import Settings

OBSERVER_OVERHEAD = estimate_text(OBSERVER_SYSTEM) + 40  # instructions and framing of its input


class Routes:
    """Which route each side call takes, from the figures `sizes` keeps."""

    def __init__(self, sizes: Sizes, settings: Settings) -> None:
        self.sizes, self.settings = sizes, settings

    def observer_call(self, session: SessionLike, chunks: Sequence[Chunk], raw: Sequence[Event], whole: Span,
                       keep_from: int | None = None) -> SideCall:
        """How the observation of `whole` is asked for: through the agent's cached prefix (all of
        `whole`) or as a separate request within the side-call limit (its oldest part that fits),
        whichever the numbers say costs less (memory/routes.py). `keep_from`: the current turn's
        request, which the cache route then leaves out (it is never observed, and it is not in
        the cache yet)."""
        factor = self.sizes.estimator.factor
        room = self.sizes.budget(session).room(OBSERVER_SYSTEM)
        shown = min(OBSERVATIONS_SHOWN, room // 4)
        clipped = clip_span(raw, whole, room - shown - 40, self.sizes.observer_view, self.sizes.estimator)
        viewed = sum(self.sizes.observer_view(e) for e in raw if clipped.seq_from <= e.seq <= clipped.seq_to)
        earlier = min(sum(chunk_size(c) for c in chunks), shown)
        max_tokens = observer_max_tokens(whole.tokens, self.settings.side_call_max_tokens)
        if keep_from is not None and self._answered_since(session, keep_from):
            keep_from = None  # mid-turn: the cache holds the turn's request already, up to its last breakpoint
        prefix = None
        if keep_from is not None:
            prefix = self._prompt_size(session, before=keep_from)
        separate_input = int((OBSERVER_OVERHEAD + viewed + earlier) * factor)
        if 0 < clipped.tokens < whole.tokens:
            # The separate route covers only its oldest part per call: weighed for all of it, as
            # the cache route is, it takes as many calls as that part goes into the stretch.
            separate_input = int(separate_input * whole.tokens / clipped.tokens)
        choice = self.route(session, OBSERVER_OVERHEAD, separate_input, max_tokens, whole.tokens, prefix=prefix)
        if choice.route == "cache":
            return SideCall("observer", "cache", self.sizes.agent_model(session), max_tokens, seq_from=whole.seq_from,
                            seq_to=whole.seq_to, quote=choice.recorded(), prefix_to=keep_from)
        separate_max = observer_max_tokens(clipped.tokens, self.settings.side_call_max_tokens)
        return SideCall("observer", "separate", side_model(session, self.settings), separate_max,
                        tool=self.settings.side_call_tools, seq_from=clipped.seq_from, seq_to=clipped.seq_to,
                        room=room, shown=shown, quote=choice.recorded())

    def route(self, session: SessionLike, instruction: int, separate_input: int, max_tokens: int,
               compressed: int, prefix: int | None = None) -> RouteChoice:
        """`choose_route` with this session's figures: what the agent's last call says the cache
        holds, the size of the agent prompt the cache route sends (`prefix`: the conversation
        before the current turn's request; by default the next agent request's estimated size),
        and the window it must fit in."""
        size = self.sizes.context(session)
        prefix = self._prompt_size(session) if prefix is None else prefix
        cached = self._cached_prefix(session, size, prefix)
        through = prefix + int(instruction * self.sizes.estimator.factor)
        prompt_limit = self.sizes.limits(session).prompt
        if prompt_limit is not None and through + max_tokens > prompt_limit:
            cached = 0  # the agent's prompt and an instruction would not fit: nothing to read through
        return choose_route(self.sizes.agent_model(session), side_model(session, self.settings), cached=cached,
                            uncached=max(0, through - cached), separate_input=separate_input,
                            answer=int(compressed * OBSERVATION_YIELD))

    def _prompt_size(self, session: SessionLike, before: int | None = None) -> int:
        """Tokens of the agent's prompt for the events before seq `before` (all by default): as
        the server counted the agent's last call (its prompt and answer) and estimated for what
        came after it, when no chunk has changed the prompt since; else estimated throughout.
        (The estimate alone, in a process that has not yet calibrated it on a call of its own,
        can be far off: a headless `-c` run is such a process.)"""
        _, observed_to = self.sizes.update(session)
        raw = self.sizes.raw(session, observed_to)
        last, changed = self._last_agent_call(session)
        if last is not None and not changed:
            since = [e for e in raw if e.seq > last.seq and (before is None or e.seq < before)]
            return last.input + last.cache_read + last.cache_write + last.output + self.sizes.estimator.total(since)
        later = [e for e in raw if before is not None and e.seq >= before]
        return self.sizes.context(session).total - self.sizes.estimator.total(later)

    @staticmethod
    def _last_agent_call(session: SessionLike) -> tuple[UsageEvent | None, bool]:
        """The agent's last call, read back from the log's end, and whether a chunk (an
        observation or a reflection) has changed the prompt since; (None, True) past a chunk."""
        for event in reversed(session.events):
            if isinstance(event, ObservationEvent | ReflectionEvent):
                return None, True
            if isinstance(event, UsageEvent) and event.purpose == "agent":
                return event, False
        return None, False

    @staticmethod
    def _answered_since(session: SessionLike, seq: int) -> bool:
        """Whether an agent call has been made since event `seq` (the log's tail, read back to it)."""
        for event in reversed(session.events):
            if event.seq < seq:
                return False
            if isinstance(event, UsageEvent) and event.purpose == "agent":
                return True
        return False

    def _cached_prefix(self, session: SessionLike, size: ContextSize, prefix: int) -> int:
        """Tokens of the agent's next request the server holds in its cache now, by what its last
        agent call reported: its whole prompt when that call was served or written (a server with
        no prefix cache, or a prompt under the model's cache minimum, reports neither), only the
        instructions when a chunk has changed the prompt since, nothing once the cache is cold."""
        if self.sizes.cache_is_cold(session.events):
            return 0
        last, changed = self._last_agent_call(session)
        if changed:
            return int(size.fixed * self.sizes.estimator.factor)
        if last is None or last.cache_read + last.cache_write == 0:
            return 0
        return min(last.input + last.cache_read + last.cache_write, prefix)
