"""The sum of some model calls, as the server billed them (their tokens, log/usage.py) and what
they cost, from the log's usage events to the index, `scribe log stats`, the REPL's bar and the
session page."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scribe.log.events import UsageEvent
from scribe.log.usage import Tokens

# (cost, cost of the same call with no caching), in USD; (None, None) for a model with no price.
Pricer = Callable[[UsageEvent], tuple[float | None, float | None]]


@dataclass
class Figures:
    """The sum of some model calls, exactly as the server billed them."""

    calls: int = 0
    tokens: Tokens = Tokens()
    cost_usd: float = 0.0  # of the priced calls
    uncached_cost_usd: float = 0.0
    unpriced: int = 0  # calls of a model with no price: their cost is unknown, not zero

    @classmethod
    def of_row(cls, calls: int, input: int, cache_read: int, cache_write: int, output: int, cost_usd: float,
               uncached_cost_usd: float, unpriced: int) -> Figures:
        """From the columns the index keeps them in (log/index.py), in that order."""
        return cls(calls, Tokens(input, cache_read, cache_write, output), cost_usd, uncached_cost_usd, unpriced)

    def row(self) -> tuple[int, int, int, int, int, float, float, int]:
        """The columns of `of_row`, in its order."""
        t = self.tokens
        return (self.calls, t.input, t.cache_read, t.cache_write, t.output, self.cost_usd, self.uncached_cost_usd,
                self.unpriced)

    @property
    def priced(self) -> bool:
        """Every call has a price, so `cost_usd` is the whole cost."""
        return self.unpriced == 0

    @property
    def prompt_tokens(self) -> int:
        return self.tokens.prompt_tokens

    @property
    def hit_rate(self) -> float:
        return self.tokens.hit_rate

    def add(self, tokens: Tokens, cost: float | None = 0.0, uncached: float | None = 0.0) -> None:
        self.calls += 1
        if cost is None:
            self.unpriced += 1
            cost = uncached = 0.0
        self.tokens += tokens
        self.cost_usd += cost
        self.uncached_cost_usd += uncached or 0.0

    def merge(self, other: Figures) -> None:
        """Add the calls `other` sums (its unpriced ones stay unpriced)."""
        self.calls += other.calls
        self.tokens += other.tokens
        self.cost_usd += other.cost_usd
        self.uncached_cost_usd += other.uncached_cost_usd
        self.unpriced += other.unpriced

    def as_dict(self) -> dict[str, Any]:
        """The usage of some calls in JSON, as every output spells it (log/usage.py). Dollar
        figures are null when any call is unpriced: a sum that leaves calls out is not their cost
        (`unpriced_calls` says how many); and null where no call was made: nothing was priced."""
        return {"calls": self.calls, **self.tokens.counts(), "prompt_tokens": self.prompt_tokens,
                "hit_rate": round(self.hit_rate, 6), "cost_usd": self._usd(self.cost_usd),
                "uncached_cost_usd": self._usd(self.uncached_cost_usd),
                "saved_usd": self._usd(self.uncached_cost_usd - self.cost_usd), "unpriced_calls": self.unpriced}

    def _usd(self, value: float) -> float | None:
        return round(value, 6) if self.calls and self.priced else None
