"""How much input an observer, reflector or curator request may hold (`side_call_tokens`).

A side call's request is its instructions, its input and a little framing. Whatever the log's
size and however many earlier calls failed, the request stays under the limit: each kind picks
what fits (the oldest raw events, the oldest chunks, the newest facts) and, as a last guard, a
text that still does not fit loses its middle, with a line saying where the rest is.

Sizes are the local estimate (context/tokens.py) scaled by the session's calibration factor,
never below 1, and only `SAFETY` of the limit is planned for: an estimate a little low still
leaves the request under the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from scribe.context.tokens import CHARS_PER_TOKEN, estimate_text

SAFETY = 0.9
FRAMING_TOKENS = 20  # the request's own structure: roles, block headers


@dataclass(frozen=True)
class InputBudget:
    limit: int  # side_call_tokens: the most tokens one side-call request may hold
    factor: float = 1.0  # the session's tokens per estimated token

    def room(self, system: str) -> int:
        """Estimated tokens left for the input once the instructions are in."""
        planned = int(self.limit * SAFETY / max(1.0, self.factor))
        return max(0, planned - estimate_text(system) - FRAMING_TOKENS)


def fit_text(text: str, tokens: int, where: str) -> str:
    """`text` if its estimate is within `tokens`, else its head and tail around a line naming what
    was left out (`where` says how to get it back, e.g. "recall seq 10-400")."""
    if estimate_text(text) <= tokens:
        return text
    marker = f"\n[… {{n}} characters left out to fit the side-call limit; {where} …]\n"
    keep = max(0, int((tokens - 1 - estimate_text(marker.format(n=len(text)))) * CHARS_PER_TOKEN))
    head = keep // 2
    tail = keep - head
    return text[:head] + marker.format(n=len(text) - keep) + (text[-tail:] if tail else "")
