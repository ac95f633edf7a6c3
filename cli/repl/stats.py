"""The numbers of a session as the REPL shows them: context size, cache hit rates, cost.

Everything is computed from the log (usage events, observation chunks, raw tail), so the bottom
bar and /stats survive a resume and agree with what the log says. Pure functions of the events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scribe.agent.compression.compressor import ContextSize
from scribe.context.render import current_model
from scribe.context.stats import Figures, Pricer, figures_of
from scribe.log.chunks import ChunkIndex
from scribe.log.events import Event, UsageEvent
from scribe.log.health import MemoryHealth
from scribe.log.pricing import price_usage
from scribe.model.window import ContextWindow, Limits

from ..log.common import UNPRICED, priced_money


@dataclass(frozen=True)
class Numbers:
    model: str
    mode: str
    context: ContextSize
    totals: Figures  # every call of the session, any purpose, priced
    agent_calls: int
    last_hit: float | None  # cache hit rate of the last agent call; None before the first
    window: ContextWindow | None = None  # the model's context window, when known
    limits: Limits | None = None  # the compression thresholds in force
    # The session's calls get a price (Anthropic's API, or a [prices.MODEL] table): before the
    # first call, a server of another kind's is "unpriced" already, not "$0.0000".
    priced_here: bool = True
    # The last request's prompt tokens as the server counted them, while that count still
    # describes the prompt (agent/compression/sizes.py last_counted); None: only an estimate.
    counted: int | None = None

    @property
    def context_tokens(self) -> str:
        """The context figure: the server's count, or the estimate marked as one (`~`)."""
        return tokens(self.counted) if self.counted is not None else f"~{tokens(self.context.total)}"


    @property
    def cost(self) -> float:
        """Of the priced calls (cost_text says "unpriced" for the rest)."""
        return self.totals.cost_usd

    @property
    def session_hit(self) -> float | None:
        return self.totals.hit_rate if self.totals.calls else None


def numbers(events: Sequence[Event], mode: str, context: ContextSize, index: ChunkIndex | None = None,
            usage: Sequence[UsageEvent] | None = None, price: Pricer = price_usage,
            window: ContextWindow | None = None, limits: Limits | None = None, server: str | None = None,
            counted: int | None = None) -> Numbers:
    """The figures the bar and /stats show. `index` and `usage` (the session's chunk index and its
    model calls as its digest keeps them) spare a scan of the whole log; `price` is the
    workspace's (configured prices, then the list); `server`: where the calls go, when that is
    not Anthropic's API (model/client.ModelClient.server); `counted`: the last request's tokens
    as the server counted them, when that still describes the prompt (else `context` is shown,
    an estimate)."""
    usages = list(usage) if usage is not None else [e for e in events if isinstance(e, UsageEvent)]
    # "Last" is the conversation's last call: a memory call (observer, curator) reads another
    # prompt, and its rate says nothing about the cache the next turn will read.
    agent = [u for u in usages if u.purpose == "agent"]
    last_hit = agent[-1].tokens.hit_rate if agent else None
    model = current_model(events, index)
    nothing = UsageEvent(seq=0, ts="", purpose="agent", model=model, input=0, cache_read=0, cache_write=0, output=0,
                         server=server)
    return Numbers(
        model=model,
        mode=mode,
        context=context,
        totals=figures_of(usages, price),
        agent_calls=len(agent),
        last_hit=last_hit,
        window=window,
        limits=limits,
        priced_here=price(nothing)[0] is not None,
        counted=counted,
    )


def tokens(n: int) -> str:
    """1234 -> 1.2k, 1234567 -> 1.23M: short enough for a status bar."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.2f}M"


def percent(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def dollars(cost: float) -> str:
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def cost_text(totals: Figures, priced_here: bool = True) -> str:
    """The session's cost, or "unpriced" for a model with no price (as `scribe log stats` says),
    and before any call where the calls will have none."""
    if not totals.calls and not priced_here:
        return UNPRICED
    return priced_money(totals, totals.cost_usd, dollars)


def window_text(window: ContextWindow | None, limits: Limits | None = None) -> str:
    """The window and the thresholds it sets, as /stats and `scribe config` say them."""
    said = window.describe() if window is not None else "unknown (context_tokens in the config sets it)"
    if limits is None:
        return said
    return (f"{said}; observe past {limits.observe:,} raw tokens, reflect past {limits.reflect:,} of "
            f"observations, side calls at most {limits.side_call:,}")


def context_field(n: Numbers, level: int = 0) -> str:
    """The context: the last request as the server counted it, or the next one's estimated size
    marked `~` (of the window), with the estimated observations and raw events; shorter at each
    `level` (see `toolbar_text`)."""
    ctx = n.context
    if level == 0:
        share = f" of {tokens(n.window.tokens)}" if n.window is not None else ""
        return f"context {n.context_tokens}{share} (obs {tokens(ctx.observations)} · raw {tokens(ctx.raw)})"
    share = f"/{short_tokens(n.window.tokens)}" if n.window is not None else ""
    if level == 1:
        figure = short_tokens(n.counted) if n.counted is not None else f"~{short_tokens(ctx.total)}"
        return f"context {figure}{share.replace('/', ' of ')}"
    figure = whole_tokens(n.counted) if n.counted is not None else f"~{whole_tokens(ctx.total)}"
    return f"ctx {figure}{share}"


def cache_field(n: Numbers, level: int = 0) -> str:
    """The cache hit rate of the last agent call and of the session."""
    if level < 2:
        return f"cache {percent(n.last_hit)} last · {percent(n.session_hit)} session"
    return f"cache {percent(n.last_hit)} · {percent(n.session_hit)}"


def short_tokens(n: int) -> str:
    """`tokens` without a fraction that says nothing: 200.0k -> 200k."""
    return tokens(n).replace(".0k", "k").replace(".00M", "M")


def whole_tokens(n: int) -> str:
    """`short_tokens` in whole thousands from 10k on: 160.9k -> 161k (the narrowest bar)."""
    return f"{n / 1000:.0f}k" if 10_000 <= n < 1_000_000 else short_tokens(n)


# How many ways the bar can be said, longest first: the context and cache fields shorten before
# any field is dropped, so the cache figure fits an 80-column terminal.
LEVELS = 3


def toolbar_fields(n: Numbers, level: int = 0) -> list[str]:
    """Model, mode, cost, context (observations and raw), cache hit rates: most wanted first."""
    return [n.model, n.mode, cost_text(n.totals, n.priced_here), context_field(n, level), cache_field(n, level)]


def toolbar_text(n: Numbers, width: int | None = None) -> str:
    """One line of the fields that fit in `width` columns: a narrow terminal shows the context
    and cache fields shorter, then drops whole fields from the right (and says so with "…")
    rather than cutting one mid-word."""
    for level in range(LEVELS):
        fields = toolbar_fields(n, level)
        line = " " + " │ ".join(fields) + " "
        if width is None or len(line) <= width:
            return line
    while width is not None and len(line) > width and len(fields) > 1:
        fields.pop()
        line = " " + " │ ".join(fields) + " │ … "
    return line


def stats_lines(n: Numbers, health: MemoryHealth | None = None) -> list[str]:
    """What /stats prints; with `health`, a line on what memory made and what failed."""
    t = n.totals
    by_purpose = f" ({n.agent_calls} agent, {t.calls - n.agent_calls} memory)" if t.calls != n.agent_calls else ""
    return [
        f"model        {n.model}   permission mode {n.mode}",
        f"calls        {t.calls}{by_purpose}",
        f"tokens       {t.prompt_tokens:,} prompt = {t.tokens.cache_read:,} cache read + {t.tokens.cache_write:,} "
        f"cache write + {t.tokens.input:,} uncached; {t.tokens.output:,} output",
        f"cache        {percent(n.session_hit)} of prompt tokens read from the cache "
        f"(last call {percent(n.last_hit)})",
        *([f"last request {n.counted:,} tokens, as the server counted them"] if n.counted is not None else []),
        f"context      ~{n.context.total:,} tokens next call (estimated): {n.context.fixed:,} instructions and tools, "
        f"{n.context.observations:,} observations, {n.context.raw:,} raw",
        f"window       {window_text(n.window, n.limits)}",
        f"cost         {cost_text(n.totals, n.priced_here)}"
        + (" (a model with no price: [prices.MODEL] in the config sets one)" if n.totals.unpriced else ""),
        *([f"memory       {health.summary()}"] if health is not None else []),
    ]
