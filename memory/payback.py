"""When observing finished turns pays for itself: the rent-or-buy rule.

The raw events of a turn that has ended ("settled") stay in the prompt, and every later model
call reads them again from the cache: that is rent. Observing them costs one observer call,
writing the chunk it produces into the cache, and writing again whatever settled events stay raw
behind the new chunk: that is the price. Paying rent until it has added up to the price, then
buying, never costs more than twice what the best choice in hindsight would have (the ski-rental
rule), and it needs no guess at how long the session will go on. The one forecast it makes is
the turn that has just begun: its calls are about to read whatever stays raw, so their rent,
at the session's recent calls per turn, counts as due. A big tool output that later calls keep
re-reading is observed soon; a short exchange in a session of one call per turn waits.

Pure functions over the raw tail, in US dollars at list prices (the observer runs on a cheaper
model than the agent, so tokens alone would misjudge it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from scribe.log.events import AssistantEvent, Event, ToolResultEvent, UsageEvent, UserEvent
from scribe.log.pricing import DEFAULT_PRICE, price_for

from .observer import safe_boundaries

# Observation lines come out at about a tenth of what the observer reads (it keeps facts and
# exact identifiers, not output): the expected size of the answer and of the chunk it becomes.
OBSERVATION_YIELD = 0.1


@dataclass(frozen=True)
class Rates:
    """USD per token for what observing buys and what keeping raw rents."""

    read: float  # the agent's cache read
    write: float  # the agent's 5-minute cache write
    observer_input: float
    observer_output: float

    @classmethod
    def of(cls, model: str, observer_model: str) -> Rates:
        # An unpriced model is weighed at the default model's rates (see DEFAULT_PRICE).
        agent = (price_for(model) or DEFAULT_PRICE).base
        observer = (price_for(observer_model) or DEFAULT_PRICE).base
        return cls(read=agent.read / 1e6, write=agent.write_5m / 1e6,
                   observer_input=observer.input / 1e6, observer_output=observer.output / 1e6)


@dataclass(frozen=True)
class Quote:
    """The settled events worth observing now: raw[0..last], with what they cost and saved."""

    last: int  # index into the raw tail
    rent_paid: float
    price: float


def turn_start(raw: Sequence[Event]) -> int | None:
    """Index of the current turn's user message, if no model call of that turn has happened yet."""
    for i in range(len(raw) - 1, -1, -1):
        if isinstance(raw[i], AssistantEvent):
            return None
        if isinstance(raw[i], UserEvent):
            return i
    return None


def calls_since_settled(raw: Sequence[Event]) -> list[int]:
    """For each event, how many agent calls have read it since its turn ended."""
    calls = [0] * len(raw)
    seen = 0  # agent calls after the event being looked at
    at_next_user = 0  # agent calls after the next user message: after the event's turn ended
    for i in range(len(raw) - 1, -1, -1):
        event = raw[i]
        calls[i] = at_next_user
        if isinstance(event, UserEvent):
            at_next_user = seen
        elif isinstance(event, UsageEvent) and event.purpose == "agent":
            seen += 1
    return calls


# The most of the last finished exchange kept raw behind a new chunk. Everything kept there is
# written to the cache again at each observation; a short answer ("done: 3 files changed, shall
# I push?") is worth that, a long one (a 900-token design answer in a chat) costs more in
# rewrites than it saves, and its observation keeps the gist while recall has every word.
KEEP_RAW_TOKENS = 300


def raw_from(raw: Sequence[Event], current: int, tokens: Sequence[float] | None = None,
             limit: float = KEEP_RAW_TOKENS) -> int:
    """Where the part of the last finished exchange that stays raw begins: its final answer (the
    model's last message, one that calls no tool), or its user message too when no tool ran in
    between (a plain exchange is small); with `tokens` (each event's share of the prompt), only
    while what stays is at most `limit` tokens. `current` when nothing stays."""
    def fits(start: int) -> bool:
        return tokens is None or sum(tokens[start:current]) <= limit

    for i in range(current - 1, -1, -1):
        event = raw[i]
        if isinstance(event, UserEvent):
            return current
        if isinstance(event, AssistantEvent):
            if any(b.get("type") == "tool_use" for b in event.content):
                return current
            asked = next((j for j in range(i - 1, -1, -1) if isinstance(raw[j], UserEvent)), None)
            if asked is not None and not any(isinstance(e, ToolResultEvent) for e in raw[asked:i]) and fits(asked):
                return asked
            return i if fits(i) else current
    return current


def calls_per_turn(raw: Sequence[Event]) -> float:
    """Agent calls per turn over the turns that began in `raw` (at least one)."""
    turns = sum(isinstance(e, UserEvent) for e in raw)
    calls = sum(isinstance(e, UsageEvent) and e.purpose == "agent" for e in raw)
    return max(1.0, calls / turns) if turns else 1.0


def paid_off(raw: Sequence[Event], prompt_tokens: Sequence[float], observer_tokens: Sequence[float],
             observer_overhead: float, rates: Rates, kept_tokens: Sequence[float] | None = None, *,
             cold: bool = False) -> Quote | None:
    """The longest run of settled events, from the oldest, whose rent has paid for observing it.

    `prompt_tokens[i]`: what raw[i] adds to the agent's prompt now; `kept_tokens[i]`: what it
    will add if it stays raw behind the new chunk (tool outputs are shown shorter then; by
    default the same); `observer_tokens[i]`: what it adds to the observer's input;
    `observer_overhead`: the observer's instructions and the earlier observations it is shown.
    `cold`: the prompt cache has expired, so the next call writes the whole prompt whatever
    happens: nothing kept raw is rewritten because of the chunk, and what is observed is not
    written at all, which counts toward the price like rent already paid.

    Rent counts the calls that have read an event since its turn ended and the calls the
    current turn is expected to make (it has begun, so at least one will): a finished turn that
    the next one would re-read call after call is observed before it does, not after.

    Called at a turn start (the current turn is never observed here, the finished ones all may
    be); None when nothing has paid off yet. The new chunk's own rent, about a tenth of what it replaces, is left out."""
    current = turn_start(raw)
    if current is None or current == 0:
        return None
    # The current turn has begun, so its calls will read whatever stays raw: count the rent they
    # are expected to pay (as many calls as the finished turns in view made on average) as due.
    ahead = calls_per_turn(raw[:current])
    calls = [c + ahead for c in calls_since_settled(raw)]
    rent = list(accumulate(c * t * rates.read for c, t in zip(calls[:current], prompt_tokens[:current], strict=True)))
    if cold:  # observing spares writing these events again at the next call
        rent = [r + t * rates.write for r, t in zip(rent, accumulate(prompt_tokens[:current]), strict=True)]
    read_by_observer = list(accumulate(observer_tokens[:current]))
    kept = prompt_tokens if kept_tokens is None else kept_tokens
    kept_raw = list(accumulate(reversed(kept[:current])))[::-1]  # kept_raw[i]: tokens of raw[i:current]
    best: Quote | None = None
    # Every finished turn may be observed, the last one too: whatever stays raw behind the new
    # chunk is written to the cache again, and a write costs 25 reads at Sonnet 5.5's prices, so
    # keeping the last exchange raw cost more than re-reading it ever saved (recall has it whole).
    # Its final answer stays, though (with the question, when no tool ran between), when it is
    # short (KEEP_RAW_TOKENS): it is what the person's next message answers ("yes, do that"),
    # and an observation of it would paraphrase the very words being replied to.
    for i in safe_boundaries(raw[:raw_from(raw, current, prompt_tokens)]):
        answer = OBSERVATION_YIELD * read_by_observer[i]
        rewrite = kept_raw[i + 1] if i + 1 < current and not cold else 0
        price = ((observer_overhead + read_by_observer[i]) * rates.observer_input
                 + answer * (rates.observer_output + rates.write)
                 + rewrite * (rates.write - rates.read))
        if rent[i] >= price:
            best = Quote(i, rent[i], price)
    return best


# A reflection comes out at about a third of what it condenses (the reflector is asked for half
# at first, less on retries): the share of the chunks' reads it stops is the rest.
REFLECTION_YIELD = 1 / 3


def reflection_paid_off(chunk_tokens: Sequence[float], calls_since: Sequence[int], overhead: float,
                        rates: Rates) -> int | None:
    """How many of the oldest chunks to condense into one reflection now (at least two), or None.

    The same rent-or-buy rule for observations that every call re-reads: `chunk_tokens[i]` is
    what chunk i adds to the prompt, `calls_since[i]` how many agent calls have read it since it
    was made; the rent is what re-reading the part a reflection would remove has cost so far.
    The price: the reflector's call (`overhead`: its instructions), writing its answer, and
    writing again the chunks kept after it, except the newest, which is new and written anyway.

    Called just after an observation made at a turn start, so the raw tail is rewritten at the
    next call whatever happens and costs the reflection nothing more."""
    best: int | None = None
    rent = condensed = 0.0
    last = len(chunk_tokens) - 1  # the newest chunk stays verbatim
    # What is kept after the first k+1 chunks (the newest aside), for every k at once: a session
    # of tens of thousands of chunks is not summed again at each k.
    kept_after = [0.0] * max(last, 0)
    for k in range(last - 2, -1, -1):
        kept_after[k] = kept_after[k + 1] + chunk_tokens[k + 1]
    for k in range(last):
        rent += calls_since[k] * chunk_tokens[k] * rates.read * (1 - REFLECTION_YIELD)
        condensed += chunk_tokens[k]
        answer = REFLECTION_YIELD * condensed
        rewrite = kept_after[k]
        price = ((overhead + condensed) * rates.observer_input + answer * (rates.observer_output + rates.write)
                 + rewrite * (rates.write - rates.read))
        if k >= 1 and rent >= price:
            best = k + 1
    return best
