"""Dollar cost of model calls, from one price table. Pure functions; no I/O.

List prices in USD per million tokens, each rate written out per model (input, 5-minute and
1-hour cache writes, cache reads, output): since October 2026 the read rate is no longer one
multiple of input for every model (Sonnet 5.5 reads at 0.05x, Fable 5.1 at 0.025x), so a table
of multipliers would misprice the very models scribe uses by default. Checked against
Anthropic's pricing page and model overviews as stored on 2026-12-01; `scribe log stats`, `run
--output json`, the REPL's figures, the payback rule and the benchmarks all price from here.

A model that is not in the table (a local server's `local`, `smollm2`, `qwen2.5-coder`, a future
name) has no price: it is shown as tokens and time, its cost "unpriced", never at a Claude rate
it was not billed. Nor is a call to a server that is not Anthropic's (its usage event names the
`server`), whatever the model is called there. A `[prices.MODEL]` table in the config
(settings/prices.read_prices) prices either: a `PriceBook` holds those tables before the list
prices.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
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
# The rates the payback rule weighs an unpriced model at (memory/payback.py): it compares the rent
# of keeping tokens raw with the price of observing them, so only the ratio of reads, writes and
# observer tokens matters, and the default agent model's ratio is as good a guess as any.
DEFAULT_PRICE = PRICES["claude-sonnet-5-5"]
# The keys of a `[prices.MODEL]` config table, USD per million tokens; input and output are required.
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")

# (cost, cost of the same call with no caching), in USD; (None, None) for an unpriced model.
Cost = tuple[float | None, float | None]
UNPRICED: Cost = (None, None)


def _longest_prefix(table: Mapping[str, Price], model: str) -> Price | None:
    matches = [k for k in table if model.startswith(k)]
    return table[max(matches, key=len)] if matches else None


@cache  # a prefix scan of the table per call; listing sessions prices every call they made
def list_price(model: str) -> Price | None:
    """The model's list price, None for a model the table does not know."""
    return _longest_prefix(PRICES, model)


def configured_price(rates: Mapping[str, float]) -> Price:
    """A `[prices.MODEL]` table as a Price: cache reads and writes cost the input rate unless
    given (a server that does not say it bills its cache differently is not assumed to)."""
    input, output = float(rates["input"]), float(rates["output"])
    read = float(rates.get("cache_read", input))
    write = float(rates.get("cache_write", input))
    return Price(TokenRates(input, write, write, read, output))


@dataclass(frozen=True)
class PriceBook:
    """The prices one front end shows: the config's `[prices.MODEL]` tables (longest prefix, as
    the list), then the list prices; anything else is unpriced."""

    configured: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def price_for(self, model: str, server: str | None = None) -> Price | None:
        """The model's price: a configured table, else its list price, which is Anthropic's bill
        and so never a call's to another `server`."""
        if self.configured:
            own = _longest_prefix({k: configured_price(v) for k, v in self.configured.items()}, model)
            if own is not None:
                return own
        return list_price(model) if server is None else None

    def call_cost(self, model: str, *, input: int, cache_read: int, cache_write: int, output: int,
                  cache_write_1h: int = 0, server: str | None = None) -> float | None:
        """Dollars for one call, None when the model has no price. `cache_write` counts 5-minute
        writes, `cache_write_1h` one-hour writes (scribe's breakpoints are all 5-minute ones; the
        fake server reports both)."""
        price = self.price_for(model, server)
        if price is None:
            return None
        r = price.at(input + cache_read + cache_write + cache_write_1h)
        return (input * r.input + cache_read * r.read + cache_write * r.write_5m + cache_write_1h * r.write_1h
                + output * r.output) / 1_000_000

    def uncached_cost(self, model: str, *, input: int, cache_read: int, cache_write: int,
                      output: int, server: str | None = None) -> float | None:
        """What the same call would cost with no caching: every prompt token at the input rate."""
        price = self.price_for(model, server)
        if price is None:
            return None
        prompt = input + cache_read + cache_write
        r = price.at(prompt)
        return (prompt * r.input + output * r.output) / 1_000_000

    def cost_parts(self, model: str, *, input: int, cache_read: int, cache_write: int,
                   output: int, server: str | None = None) -> dict[str, float] | None:
        """Dollars of each kind of token in one call, each at the band the whole call falls in, so
        the parts add up to `call_cost`; None when the model has no price."""
        price = self.price_for(model, server)
        if price is None:
            return None
        r = price.at(input + cache_read + cache_write)
        return {"input": input * r.input / 1e6, "cache_read": cache_read * r.read / 1e6,
                "cache_write": cache_write * r.write_5m / 1e6, "output": output * r.output / 1e6}

    def price_usage(self, usage: UsageEvent) -> Cost:
        """Dollars for one logged call as billed, and for the same call with no caching."""
        counts = usage.tokens.counts()
        cost = self.call_cost(usage.model, **counts, server=usage.server)
        if cost is None:
            return UNPRICED
        return cost, self.uncached_cost(usage.model, **counts, server=usage.server)

    @property
    def key(self) -> str:
        """Names this pricing (the table's source and the configured prices): a sum priced under
        another is priced anew."""
        if not self.configured:
            return pricing_key()
        own = json.dumps(self.configured, sort_keys=True)
        return hashlib.sha256(f"{pricing_key()}:{own}".encode()).hexdigest()[:16]


LIST_PRICES = PriceBook()


def price_for(model: str) -> Price | None:
    return list_price(model)


def call_cost(model: str, *, input: int, cache_read: int, cache_write: int, output: int,
              cache_write_1h: int = 0) -> float | None:
    return LIST_PRICES.call_cost(model, input=input, cache_read=cache_read, cache_write=cache_write,
                                 output=output, cache_write_1h=cache_write_1h)


def cost_parts(model: str, *, input: int, cache_read: int, cache_write: int, output: int) -> dict[str, float] | None:
    return LIST_PRICES.cost_parts(model, input=input, cache_read=cache_read, cache_write=cache_write, output=output)


def price_usage(usage: UsageEvent) -> Cost:
    return LIST_PRICES.price_usage(usage)


def uncached_cost(model: str, *, input: int, cache_read: int, cache_write: int, output: int) -> float | None:
    return LIST_PRICES.uncached_cost(model, input=input, cache_read=cache_read, cache_write=cache_write,
                                     output=output)


@cache
def pricing_key() -> str:
    """Names this pricing (its source): a sum priced under another is priced anew."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
