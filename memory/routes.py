"""How a side call reads what it compresses, and the request it sends, rebuilt from the log.

Two routes:
- `separate`: the observer (or reflector) model gets its own short request: its instructions as
  the system prompt and the stretch written out as one user message (memory/observer.py). It
  reads the stretch at that model's input price, uncached: a one-shot prompt is never read twice.
- `cache`: the request is the agent's own, as render made it (same model, tools, system blocks,
  messages), with the instruction as a last user block. Its prefix is what the agent's previous
  call sent, so the provider serves it from the prompt cache (a local llama.cpp server from the
  slot that holds it) and only the new tail and the instruction are read at full price. It adds
  no tool and no `tool_choice` (either would change what the cache keys on), so the answer is
  text, read by the same tolerant readers. An observation made before a turn's first call never
  takes the turn's request, so its request is the conversation up to that request
  (`SideCall.prefix_to`): the prefix the server holds and the instruction, without the new
  message (a long paste would otherwise be evaluated for the side call and again for the agent,
  and may not fit the window beside the prefix at all).

`choose_route` weighs both by the numbers: list prices per model (log/pricing.py) where both
models are priced, else the tokens a server must evaluate; and what the agent's last call
reported of the cache (a server that served none of it, or a cache gone cold, offers nothing to
read through). The choice and everything else the request was built from is recorded on the
side call's usage event (`SideCall.recorded`), so `scribe log prompt --at SEQ` rebuilds the
request from the events before it (`rebuild`), byte for byte, like an agent call's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scribe.context.preview import OutputView, Settled
from scribe.context.render import CACHE, ImageSource, Request, render, render_messages
from scribe.log.chunks import Chunk, ChunkIndex, tail_after
from scribe.log.events import Event, SessionEvent, UserEvent
from scribe.log.pricing import price_for

from .answer_tools import OBSERVATIONS_TOOL
from .observer import OBSERVER_SYSTEM, focus_line, observer_input
from .reflector import REFLECTOR_SYSTEM, ReflectPlan, chunk_size, reflector_input

Route = Literal["cache", "separate"]
Kind = Literal["observer", "reflector"]
QUOTE_CHARS = 80


@dataclass(frozen=True)
class RouteChoice:
    """The route taken and what each would have cost: dollars at list prices (`usd`), or, where
    a model is unpriced (a local server), the prompt tokens the server would evaluate (`tokens`)."""

    route: Route
    cache: float
    separate: float
    unit: Literal["usd", "tokens"]

    def recorded(self) -> dict[str, Any]:
        return {"cache": round(self.cache, 8), "separate": round(self.separate, 8), "unit": self.unit}


def choose_route(agent_model: str, observer_model: str, *, cached: int, uncached: int, separate_input: int,
                 answer: int) -> RouteChoice:
    """`cached`: tokens of the cache route's prompt the cache would serve (0: nothing cached, or
    a server without a prefix cache); `uncached`: the rest of that prompt; `separate_input`: the
    separate request's prompt; `answer`: the expected answer, written on either route."""
    agent, observer = price_for(agent_model), price_for(observer_model)
    if agent is not None and observer is not None:
        a, o = agent.base, observer.base
        through = (cached * a.read + uncached * a.input + answer * a.output) / 1e6
        apart = (separate_input * o.input + answer * o.output) / 1e6
        unit: Literal["usd", "tokens"] = "usd"
    else:
        # Unpriced (a local server): what it costs is the time to evaluate a prompt; tokens it
        # serves from a slot's cache cost nothing, and the answer takes as long on either route.
        through, apart, unit = float(uncached), float(separate_input), "tokens"
    route: Route = "cache" if cached > 0 and through < apart else "separate"
    return RouteChoice(route, through, apart, unit)


@dataclass(frozen=True)
class SideCall:
    """What a side call's request was built from, recorded on its usage event (`side_call`)."""

    kind: Kind
    route: Route
    model: str
    max_tokens: int
    tool: bool = False  # a forced tool (the separate route only)
    seq_from: int = 0  # observer: the stretch
    seq_to: int = 0
    room: int | None = None  # observer, separate: the input limit it was written within
    shown: int = 0  # observer, separate: tokens of earlier observations shown
    supersedes: tuple[int, ...] = ()  # reflector: the chunks condensed
    attempt: int = 0  # reflector: which retry
    quote: Mapping[str, Any] = field(default_factory=dict)
    prefix_to: int | None = None  # cache route: only the events before this seq (the current turn's request)
    focus: str = ""  # observer: what the person asked a compaction to keep in view (`/compact FOCUS`)

    def recorded(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "route": self.route, "model": self.model,
                               "max_tokens": self.max_tokens, "quote": dict(self.quote)}
        if self.kind == "observer":
            out |= {"seq_from": self.seq_from, "seq_to": self.seq_to}
            if self.route == "separate":
                out |= {"tool": self.tool, "room": self.room, "shown": self.shown}
        else:
            out |= {"supersedes": list(self.supersedes), "attempt": self.attempt}
            if self.route == "separate":
                out["tool"] = self.tool
        if self.prefix_to is not None:
            out["prefix_to"] = self.prefix_to
        if self.focus:
            out["focus"] = self.focus
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SideCall:
        return cls(kind=record["kind"], route=record["route"], model=str(record["model"]),
                   max_tokens=int(record["max_tokens"]), tool=bool(record.get("tool", False)),
                   seq_from=int(record.get("seq_from", 0)), seq_to=int(record.get("seq_to", 0)),
                   room=record.get("room"), shown=int(record.get("shown", 0)),
                   supersedes=tuple(int(s) for s in record.get("supersedes", ())),
                   attempt=int(record.get("attempt", 0)), quote=dict(record.get("quote", {})),
                   prefix_to=None if record.get("prefix_to") is None else int(record["prefix_to"]),
                   focus=str(record.get("focus", "")))


class NotRebuildable(ValueError):
    """A usage event whose side call recorded nothing to rebuild its request from."""


def build(events: Sequence[Event], call: SideCall, index: ChunkIndex | None = None,
          images: ImageSource | None = None) -> Request:
    """The request of side call `call`, made when the log held `events`. `index`: the session's
    ChunkIndex for these events (saves a scan; the result is the same without it); `images`: the
    session's image store, as render takes it (the cache route's request is the agent's)."""
    if call.route == "cache" and call.prefix_to is not None:
        events = [e for e in events if e.seq < call.prefix_to]
        index = None  # the session's index holds the events cut here
    index = index or ChunkIndex()
    chunks, observed_to = index.update(events)
    if call.kind == "observer":
        if call.route == "cache":
            return through_cache(events, observer_instruction(events, call, index), call.max_tokens, index, images)
        raw = index.shown(tail_after(events, max(observed_to, 0)))
        chosen = [e for e in raw if call.seq_from <= e.seq <= call.seq_to]
        user = observer_input([c.text for c in chunks], chosen, tail_tokens=call.shown, room=call.room,
                              focus=call.focus)
        return Request.one_shot(call.model, OBSERVER_SYSTEM, user, call.max_tokens,
                                tool=OBSERVATIONS_TOOL if call.tool else None)
    plan = plan_of(chunks, call.supersedes)
    if call.route == "cache":
        return through_cache(events, reflector_instruction(chunks, plan, call.attempt), call.max_tokens, index,
                             images)
    return Request.one_shot(call.model, REFLECTOR_SYSTEM, reflector_input(plan, call.attempt), call.max_tokens,
                            tool=OBSERVATIONS_TOOL if call.tool else None)


def rebuild(events: Sequence[Event], record: Mapping[str, Any] | None, images: ImageSource | None = None) -> Request:
    """`build` from a usage event's `side_call` record; NotRebuildable when there is none (a
    side call logged before requests were recorded)."""
    if not record:
        raise NotRebuildable("this side call recorded nothing to rebuild its request from")
    skip = record.get("skip")
    if isinstance(skip, list) and len(skip) == 2:
        # Made off the main thread (agent/session/draft.py): these events came while it ran, unseen by it.
        events = [e for e in events if not skip[0] <= e.seq <= skip[1]]
    return build(events, SideCall.from_record(record), images=images)


def plan_of(chunks: Sequence[Chunk], supersedes: Sequence[int]) -> ReflectPlan:
    wanted = set(supersedes)
    condense = [c for c in chunks if c.seq in wanted]
    return ReflectPlan(condense, [c for c in chunks if c.seq not in wanted], sum(chunk_size(c) for c in condense))


# -- through the cache ------------------------------------------------------------------------

def through_cache(events: Sequence[Event], instruction: str, max_tokens: int, index: ChunkIndex | None = None,
                  images: ImageSource | None = None) -> Request:
    """The agent's own request for `events`, with `instruction` as its last user block and
    `max_tokens` as the side call's budget. The breakpoint render puts on the last user block
    (written for the agent's next call) is left out: what follows the previous call's prefix
    here is never sent again, so writing it to the cache would be paid for and never read. The
    breakpoint on the block before it is where the previous call's prompt ended: read there."""
    agent = render(events, index, images)
    messages = [dict(m) for m in agent.messages]
    last = messages[-1]
    if last["role"] == "user":
        blocks = [dict(b) for b in last["content"]]
        blocks[-1].pop("cache_control", None)
        last["content"] = [*blocks, {"type": "text", "text": instruction}]
    else:
        messages.append({"role": "user", "content": [{"type": "text", "text": instruction}]})
    return Request(model=agent.model, max_tokens=max_tokens, tools=agent.tools, system=agent.system,
                   messages=messages, observed_to=agent.observed_to)


# The instruction's first words are the kind's system prompt's, so a server log (and the fake
# API) tells a side call from an agent call by the same words on either route.
THROUGH_CACHE_NOTE = ("You are answering as a side call, not as the agent: call no tool, do not continue the "
                      "task, and answer with the lines asked for only.")


def observer_instruction(events: Sequence[Event], call: SideCall, index: ChunkIndex | None = None) -> str:
    """The Observer's instructions, then which messages above are the stretch: the first N of
    them (seq seq_from-seq_to), ending with the one quoted; the rest stays in view as it is."""
    index = index or ChunkIndex()
    _, observed_to = index.update(events)
    messages = render(events, index).messages
    count = stretch_messages(events, call.seq_to, index, observed_to)
    count = max(1, min(count, len(messages)))
    end = messages[count - 1]
    where = (f"The stretch to observe is the first {count} messages of the conversation above (events "
             f"seq {call.seq_from}-{call.seq_to}), ending with the {end['role']} message that begins "
             f"\u00ab{quote(end)}\u00bb. Every message after it stays in the agent's view word for word: leave "
             "those out, and leave out the observations already in the system prompt.")
    asked = f"\n{focus_line(call.focus)}" if call.focus.strip() else ""
    return f"{OBSERVER_SYSTEM}\n\n{where}{asked}\n{THROUGH_CACHE_NOTE}"


def reflector_instruction(chunks: Sequence[Chunk], plan: ReflectPlan, attempt: int) -> str:
    """The Reflector's instructions, then which observation blocks of the system prompt above to
    condense (the oldest N), and the size asked for on this attempt (as reflector_input asks)."""
    target = max(50, plan.tokens // (attempt + 2))
    first, last = plan.condense[0], plan.condense[-1]
    where = (f"The observations to condense are the first {len(plan.condense)} <observations> blocks of the "
             f"system prompt above, from the one that begins \u00ab{_first_words(first.text)}\u00bb to the one that "
             f"begins \u00ab{_first_words(last.text)}\u00bb; leave the later blocks and the conversation out. "
             f"Condense them to at most about {target} tokens (they are about {plan.tokens} now).")
    return f"{REFLECTOR_SYSTEM}\n\n{where}\n{THROUGH_CACHE_NOTE}"


def stretch_messages(events: Sequence[Event], seq_to: int, index: ChunkIndex, observed_to: int) -> int:
    """How many of the request's messages the raw events up to `seq_to` fill, rendered as render
    renders the raw tail (the note that opens a tail beginning mid-turn included)."""
    raw = index.shown(tail_after(events, max(observed_to, 0)))
    header = events[0]
    assert isinstance(header, SessionEvent)
    recorded = header.recorded
    settled = Settled(index.settled_before, recorded.settled_output_chars)
    messages = render_messages([e for e in raw if e.seq <= seq_to], OutputView.of(recorded), settled)
    opens_mid_turn = not messages or messages[0]["role"] != "user"
    return len(messages) + (1 if opens_mid_turn else 0)


def quote(message: Mapping[str, Any]) -> str:
    """The first words of a message, as a person would quote it to point at it."""
    for block in message["content"]:
        kind = block.get("type")
        if kind == "text" and block.get("text", "").strip():
            return _first_words(block["text"])
        if kind == "tool_use":
            return f"(calls {block.get('name')})"
        if kind == "tool_result":
            content = block.get("content")
            text = content if isinstance(content, str) else " ".join(
                b.get("text", "") for b in content or [] if isinstance(b, dict))
            return _first_words(text) or "(a tool result)"
    return "(empty)"


def _first_words(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1].rstrip() + "\u2026"


def current_turn_start(events: Sequence[Event]) -> int | None:
    """The seq of the last user message: where the turn being answered began."""
    return next((e.seq for e in reversed(events) if isinstance(e, UserEvent)), None)


__all__ = ["CACHE", "NotRebuildable", "RouteChoice", "SideCall", "build", "choose_route", "rebuild", "through_cache"]
