"""Token figures summed from a log's `usage` events. Pure: events in, totals out."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .events import Event, UsageEvent


@dataclass(frozen=True)
class UsageTotals:
    calls: int = 0
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of every call, however it was billed."""
        return self.input + self.cache_read + self.cache_write

    @property
    def hit_rate(self) -> float:
        """Share of prompt tokens served from the cache."""
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else 0.0

    def plus(self, u: UsageEvent) -> UsageTotals:
        return UsageTotals(self.calls + 1, self.input + u.input, self.cache_read + u.cache_read,
                           self.cache_write + u.cache_write, self.output + u.output)


def usage_totals(events: Iterable[Event], *, purpose: str | None = None, skip_first: int = 0) -> UsageTotals:
    """Sum the usage events (of one purpose, if given), leaving out the first `skip_first` calls."""
    totals = UsageTotals()
    seen = 0
    for event in events:
        if isinstance(event, UsageEvent) and (purpose is None or event.purpose == purpose):
            seen += 1
            if seen > skip_first:
                totals = totals.plus(event)
    return totals
