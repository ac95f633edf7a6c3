"""Regular expressions whose work is bounded: search_files, recall and `scribe log search` run
patterns a model or a person wrote, and a pattern such as `(a|aa)+$` backtracks for longer
than the universe has left on a line of forty a's.

The `regex` engine (PyPI's drop-in for `re`, in its re-compatible VERSION0 mode) checks a
timeout inside its matching loop, so a runaway match ends wherever it is, in any thread,
without a subprocess or a signal. One `BoundedPattern` carries one budget for a whole search:
every match gets what is left of it, so ten thousand slow lines cannot add up past it either.
With `each_search`, the budget is each match's own instead: `scribe log search` goes through a
gigabyte of log, whose total time says nothing about the pattern, while one line that takes
seconds does.

Memory is bounded too. A backtracking match keeps state for every character it has gone
through (some hundred bytes each for `(a|aa)+$`), so one line of twenty megabytes is gigabytes of
it, and the engine gives up with a MemoryError. A text longer than LONG_LINE_CHARS is matched in
its first LONG_LINE_CHARS only (counted in `cut`, for the one line that says so; a match must end
before the cut, and `$` does not match there), and a match that runs out of memory anyway is
stopped like a slow one: one line, never a traceback."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex


class PatternError(ValueError):
    """The pattern is not a valid regular expression."""


class PatternTooSlow(Exception):
    """Matching used up the search's budget (of time, or of memory); the message says so in one line."""


# The longest text one match goes through: about 130 MB of backtracking state at worst.
LONG_LINE_CHARS = 1 << 20


def cut_note(cut: int) -> str:
    """The one line saying how many texts were matched in their first LONG_LINE_CHARS only."""
    lines = "1 line" if cut == 1 else f"{cut:,} lines"
    return (f"{lines} longer than {LONG_LINE_CHARS >> 20} MB {'was' if cut == 1 else 'were'} searched in "
            f"{'its' if cut == 1 else 'their'} first {LONG_LINE_CHARS >> 20} MB only")


@dataclass
class BoundedPattern:
    source: str
    budget_s: float
    ignore_case: bool = False
    each_search: bool = False
    spent_s: float = 0.0
    cut: int = 0  # texts matched in their first LONG_LINE_CHARS only
    _compiled: regex.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Imported at the first pattern: a turn that searches nothing (`scribe run hello`) never needs it.
        import regex  # noqa: PLC0415

        flags = regex.VERSION0 | (regex.IGNORECASE if self.ignore_case else 0)
        try:
            self._compiled = regex.compile(self.source, flags)
        except regex.error as exc:
            raise PatternError(f"invalid regular expression {self.source!r}: {exc}") from None

    def search(self, text: str, *, cut: bool = False) -> regex.Match[str] | None:
        """The first match in `text`; `cut`: the caller has cut `text` from a longer line already."""
        left = self.budget_s if self.each_search else self.budget_s - self.spent_s
        if left <= 0:
            raise self._too_slow()
        if len(text) > LONG_LINE_CHARS:
            self.cut += 1
            text, cut = text[:LONG_LINE_CHARS], True
        end = len(text)
        if cut:
            # A character after the cut, so that `$` does not take the cut for the line's end; a
            # match that reaches it is not one of the line's.
            text += "\x00"
        started = time.perf_counter()
        try:
            found = self._compiled.search(text, timeout=left)
            return None if cut and found is not None and found.end() > end else found
        except TimeoutError:
            self.spent_s = self.budget_s
            raise self._too_slow() from None
        except MemoryError:
            self.spent_s = self.budget_s
            raise PatternTooSlow(
                f"the regular expression {self.source!r} needed more memory than one match may have and was "
                "stopped; it likely backtracks without end (nested or overlapping repeats such as (a+)+ or "
                "(a|aa)+); write it more specifically") from None
        finally:
            self.spent_s += time.perf_counter() - started

    def _too_slow(self) -> PatternTooSlow:
        return PatternTooSlow(
            f"the regular expression {self.source!r} took more than {self.budget_s:g} s of matching "
            "(regex_timeout_s) and was stopped; it likely backtracks without end (nested or overlapping "
            "repeats such as (a+)+ or (a|aa)+); write it more specifically")
