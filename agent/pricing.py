"""Dollar cost of model calls, from one price table. Pure functions; no I/O.

Prices are list prices in USD per million tokens for base input and output; cache writes and
reads are multiples of the base input price (5-minute writes 1.25x, 1-hour writes 2x, reads 0.1x).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from scribe.memory.events import UsageEvent

CACHE_WRITE_5M = 1.25
CACHE_WRITE_1H = 2.0
CACHE_READ = 0.1


@dataclass(frozen=True)
class Price:
    input: float  # USD per million input tokens
    output: float


# Matched by the longest key that prefixes the model name.
PRICES: dict[str, Price] = {
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus": Price(5.0, 25.0),
    "claude-sonnet": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-haiku": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
}
DEFAULT_PRICE = Price(3.0, 15.0)


@cache  # a prefix scan of the table per call; listing sessions prices every call they made
def price_for(model: str) -> Price:
    matches = [k for k in PRICES if model.startswith(k)]
    return PRICES[max(matches, key=len)] if matches else DEFAULT_PRICE


def call_cost(model: str, *, input: int, cache_read: int, cache_write: int, output: int,
              write_multiplier: float = CACHE_WRITE_5M) -> float:
    p = price_for(model)
    billed_input = input + cache_read * CACHE_READ + cache_write * write_multiplier
    return (billed_input * p.input + output * p.output) / 1_000_000


def price_usage(usage: UsageEvent) -> tuple[float, float]:
    """Dollars for one logged call as billed, and for the same call with no caching."""
    counts = {"input": usage.input, "cache_read": usage.cache_read, "cache_write": usage.cache_write,
              "output": usage.output}
    return call_cost(usage.model, **counts), uncached_cost(usage.model, **counts)


def uncached_cost(model: str, *, input: int, cache_read: int, cache_write: int, output: int) -> float:
    """What the same call would cost with no caching: every input token at the base price."""
    p = price_for(model)
    return ((input + cache_read + cache_write) * p.input + output * p.output) / 1_000_000


@cache
def pricing_key() -> str:
    """Names this pricing (its source): a sum priced under another is priced anew."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
