"""The Reflector's side of memory, without the model call: which observation chunks to
condense, the instructions for each attempt, what counts as a reflection worth keeping, and
when to back off.

A reflection must be non-empty and smaller than what it replaces; otherwise it is refused.
After the retries fail, reflection waits until observations have grown by a margin (recorded
in the log, so a restart does not retry in a loop either).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scribe.context.tokens import estimate_text
from scribe.log.chunks import Chunk

from .answer import Answer, UnusableAnswer
from .observations import Observations, read_observations

REFLECT_ATTEMPTS = 3
# Share of the reflection threshold kept verbatim as the newest chunks.
KEEP_NEWEST_SHARE = 0.3
# After a failed reflection, wait until observations grow by this factor before trying again.
BACKOFF_GROWTH = 1.25
BACKOFF_KIND = "reflect_backoff"

REFLECTOR_SYSTEM = """\
You are the Reflector for a coding agent. Its long-term memory is a list of observations, one \
per line, tagged 🔴 (must keep), 🟡 (useful), 🟢 (background), ✅ (done). You condense the \
oldest of them into fewer lines that preserve what matters.

Rules:
- Keep every fact of the 🔴 lines that still holds: user goals, decisions, constraints, preferences. \
Merge duplicates; when a later line supersedes an earlier one, keep only the later.
- Keep 🟡 lines that are still relevant; fold related ones into one line.
- Drop 🟢 lines that no longer matter. Collapse ✅ lines into short outcomes.
- Keep exact paths, identifiers, numbers, commands, error text and (seq N) references as written.
- Same format: one tagged line per observation, then "Current task: ..." and "Next step: ..." \
taken from the most recent observations.
- No headings, no commentary."""


@dataclass(frozen=True)
class ReflectPlan:
    condense: list[Chunk]  # oldest chunks, to be replaced by one reflection
    keep: list[Chunk]  # newest chunks, kept verbatim
    tokens: int  # estimated tokens of `condense`


def chunk_size(chunk: Chunk) -> int:
    return chunk.tokens or estimate_text(chunk.text)


# The reflector's input around the chunks: the line before them, and the line asking for a size.
INPUT_FRAMING_TOKENS = 30


def plan_reflection(chunks: Sequence[Chunk], reflect_tokens: int, *, force: bool = False,
                    room: int | None = None) -> ReflectPlan | None:
    """Condense the oldest chunks, keeping the newest ones that fit in a share of the threshold.
    With `room` (the side-call limit, in estimated tokens), only the oldest chunks that fit in it
    are condensed; the rest wait for the next reflection. None when there is nothing worth
    condensing (under threshold, fewer than two chunks, or not two that fit)."""
    total = sum(chunk_size(c) for c in chunks)
    if len(chunks) < 2 or (total <= reflect_tokens and not force):
        return None
    keep: list[Chunk] = []
    kept = 0
    for chunk in reversed(chunks[1:]):
        if kept + chunk_size(chunk) > reflect_tokens * KEEP_NEWEST_SHARE:
            break
        keep.insert(0, chunk)
        kept += chunk_size(chunk)
    condense = list(chunks[: len(chunks) - len(keep)])
    if room is not None:
        fitting: list[Chunk] = []
        used = INPUT_FRAMING_TOKENS
        for chunk in condense:
            used += chunk_size(chunk) + 1
            if used > room:
                break
            fitting.append(chunk)
        keep = list(chunks[len(fitting):]) if len(fitting) < len(condense) else keep
        condense = fitting
    if len(condense) < 2 and not (force and condense):
        return None
    return ReflectPlan(condense, keep, sum(chunk_size(c) for c in condense))


def reflector_input(plan: ReflectPlan, attempt: int) -> str:
    """Each retry asks for harder compression: a target of 1/2, 1/3, 1/4 of the input. The
    observations come first and the size asked for last, so a retry repeats its attempt's prefix
    and a server with a prefix cache (llama.cpp's slots) evaluates only the last line again."""
    target = max(50, plan.tokens // (attempt + 2))
    body = "\n".join(c.text.strip() for c in plan.condense)
    return (f"Observations to condense:\n\n{body}\n\nCondense the observations above to at most about "
            f"{target} tokens (they are about {plan.tokens} now).")


def read_reflection(answer: Answer, plan: ReflectPlan) -> Observations:
    """The reflector's reader: the observations of the answer in the canonical form, or
    UnusableAnswer when it has none, was cut at max_tokens, or is not smaller than what it
    replaces. A cut reflection is refused, not trimmed: it would stand in for every condensed
    chunk while saying nothing of the ones it did not reach (the next attempt asks for less)."""
    if answer.cut:
        raise UnusableAnswer("the reflection was cut at max_tokens before it covered what it condenses")
    reading = read_observations(answer)
    size = estimate_text(reading.text)
    if size >= plan.tokens:
        raise UnusableAnswer(f"the reflection ({size} tokens) is not smaller than what it replaces "
                             f"({plan.tokens} tokens)")
    return reading


def accept_reflection(text: str, plan: ReflectPlan) -> str:
    """`read_reflection` of a plain answer, as its canonical text."""
    return read_reflection(Answer(text), plan).text


__all__ = ["REFLECTOR_SYSTEM", "REFLECT_ATTEMPTS", "ReflectPlan", "UnusableAnswer", "accept_reflection",
           "plan_reflection", "read_reflection", "reflector_input"]
