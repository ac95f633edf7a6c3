"""Dollar cost of model calls, from one price table. Pure functions; no I/O.

List prices in USD per million tokens, each rate written out per model (input, 5-minute and
1-hour cache writes, cache reads, output): since October 2026 the read rate is no longer one
multiple of input for every model (Sonnet 5.5 reads at 0.05x, Fable 5.1 at 0.025x), so a table
of multipliers would misprice the very models scribe uses by default. Checked against
Anthropic's pricing page and model overviews as stored on 2026-12-01; `scribe log stats`, `run
--output json`, the REPL's figures, the payback rule and the benchmarks all price from here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from scribe.log.events import UsageEvent


@dataclass(frozen=True)
class TokenRates:
    """USD per million tokens of each kind."""

    input: float
    write_5m: float
    write_1h: float
    read: float
    output: float

    def scaled(self, factor: float) -> TokenRates:
        return TokenRates(*(factor * r for r in (self.input, self.write_5m, self.write_1h, self.read, self.output)))


@dataclass(frozen=True)
class Price:
    """A model's rates; `long` (prompt tokens, rates) replaces them for every token of a request
    whose prompt (input + cache reads + cache writes) is above that many tokens."""

    base: TokenRates
    long: tuple[int, TokenRates] | None = None

    def at(self, prompt_tokens: int) -> TokenRates:
        if self.long is not None and prompt_tokens > self.long[0]:
            return self.long[1]
        return self.base

    @property
    def input(self) -> float:  # the base input rate, what "price per MTok" usually means
        return self.base.input

    @property
    def output(self) -> float:
        return self.base.output


def _standard(input: float, output: float, read: float | None = None) -> Price:
    """The usual shape: writes at 1.25x (5 minutes) and 2x (1 hour) input, reads at 0.1x
    unless the model's page says otherwise."""
    return Price(TokenRates(input, input * 1.25, input * 2.0, input * 0.1 if read is None else read, output))


_HAIKU_5_5 = TokenRates(0.10, 0.125, 0.20, 0.01, 0.50)

# Matched by the longest key that prefixes the model name.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": _standard(10.0, 50.0, read=0.25),
    "claude-mythos-5-1": _standard(10.0, 50.0, read=0.25),
    "claude-fable-5": _standard(10.0, 50.0),
    "claude-mythos-5": _standard(10.0, 50.0),
    "claude-opus-5-5": _standard(4.0, 20.0, read=0.20),
    "claude-opus-5": _standard(5.0, 25.0),
    "claude-opus-4-0": _standard(15.0, 75.0),
    "claude-opus-4-1": _standard(15.0, 75.0),
    "claude-opus-4-2": _standard(15.0, 75.0),  # the dated ids of Opus 4: claude-opus-4-2025...
    "claude-opus": _standard(5.0, 25.0),  # Opus 4.5 to 4.8
    "claude-sonnet-5-5": _standard(2.0, 10.0, read=0.10),  # reads cut from $0.20 on 2026-10-07
    "claude-sonnet-5": _standard(2.0, 10.0),
    "claude-sonnet": _standard(3.0, 15.0),  # Sonnet 3.7 to 4.6
    "claude-haiku-5-5": Price(_HAIKU_5_5, (100_000, _HAIKU_5_5.scaled(5.0))),
    "claude-haiku-4-5": _standard(1.0, 5.0),
    "claude-haiku": _standard(1.0, 5.0),
    "claude-3-5-haiku": _standard(0.8, 4.0),
    "claude-3-haiku": Price(TokenRates(0.25, 0.30, 0.50, 0.03, 1.25)),
}
# An unknown model (a local server's, a future one) is priced like the default agent model.
DEFAULT_PRICE = PRICES["claude-sonnet-5-5"]


@cache  # a prefix scan of the table per call; listing sessions prices every call they made
def price_for(model: str) -> Price:
    matches = [k for k in PRICES if model.startswith(k)]
    return PRICES[max(matches, key=len)] if matches else DEFAULT_PRICE


def call_cost(model: str, *, input: int, cache_read: int, cache_write: int, output: int,
              cache_write_1h: int = 0) -> float:
    """Dollars for one call. `cache_write` counts 5-minute writes, `cache_write_1h` one-hour
    writes (scribe's breakpoints are all 5-minute ones; the fake server reports both)."""
    prompt = input + cache_read + cache_write + cache_write_1h
    r = price_for(model).at(prompt)
    return (input * r.input + cache_read * r.read + cache_write * r.write_5m + cache_write_1h * r.write_1h
            + output * r.output) / 1_000_000


def cost_parts(model: str, *, input: int, cache_read: int, cache_write: int, output: int) -> dict[str, float]:
    """Dollars of each kind of token in one call, each at the band the whole call falls in, so
    the parts add up to `call_cost`."""
    r = price_for(model).at(input + cache_read + cache_write)
    return {"input": input * r.input / 1e6, "cache_read": cache_read * r.read / 1e6,
            "cache_write": cache_write * r.write_5m / 1e6, "output": output * r.output / 1e6}


def price_usage(usage: UsageEvent) -> tuple[float, float]:
    """Dollars for one logged call as billed, and for the same call with no caching."""
    counts = {"input": usage.input, "cache_read": usage.cache_read, "cache_write": usage.cache_write,
              "output": usage.output}
    return call_cost(usage.model, **counts), uncached_cost(usage.model, **counts)


def uncached_cost(model: str, *, input: int, cache_read: int, cache_write: int, output: int) -> float:
    """What the same call would cost with no caching: every prompt token at the input rate."""
    prompt = input + cache_read + cache_write
    r = price_for(model).at(prompt)
    return (prompt * r.input + output * r.output) / 1_000_000


@cache
def pricing_key() -> str:
    """Names this pricing (its source): a sum priced under another is priced anew."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
