"""Regular expressions whose work is bounded: search_files, recall and `scribe log search` run
patterns a model or a person wrote, and a pattern such as `(a|aa)+$` backtracks for longer
than the universe has left on a line of forty a's.

The `regex` engine (PyPI's drop-in for `re`, in its re-compatible VERSION0 mode) checks a
timeout inside its matching loop, so a runaway match ends wherever it is, in any thread,
without a subprocess or a signal. One `BoundedPattern` carries one budget for a whole search:
every match gets what is left of it, so ten thousand slow lines cannot add up past it either.
With `each_search`, the budget is each match's own instead: `scribe log search` goes through a
gigabyte of log, whose total time says nothing about the pattern, while one line that takes
seconds does."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import regex


class PatternError(ValueError):
    """The pattern is not a valid regular expression."""


class PatternTooSlow(Exception):
    """Matching used up the search's budget; the message says so in one line."""


@dataclass
class BoundedPattern:
    source: str
    budget_s: float
    ignore_case: bool = False
    each_search: bool = False
    spent_s: float = 0.0
    _compiled: regex.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        flags = regex.VERSION0 | (regex.IGNORECASE if self.ignore_case else 0)
        try:
            self._compiled = regex.compile(self.source, flags)
        except regex.error as exc:
            raise PatternError(f"invalid regular expression {self.source!r}: {exc}") from None

    def search(self, text: str) -> regex.Match[str] | None:
        left = self.budget_s if self.each_search else self.budget_s - self.spent_s
        if left <= 0:
            raise self._too_slow()
        started = time.perf_counter()
        try:
            return self._compiled.search(text, timeout=left)
        except TimeoutError:
            self.spent_s = self.budget_s
            raise self._too_slow() from None
        finally:
            self.spent_s += time.perf_counter() - started

    def _too_slow(self) -> PatternTooSlow:
        return PatternTooSlow(
            f"the regular expression {self.source!r} took more than {self.budget_s:g} s of matching "
            "(regex_timeout_s) and was stopped; it likely backtracks without end (nested or overlapping "
            "repeats such as (a+)+ or (a|aa)+); write it more specifically")
