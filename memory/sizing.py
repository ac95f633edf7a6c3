"""How big a side call's answer may be, and whether what it produced is worth using.

A side call writes a compression of something: an observation of a stretch of raw events, a
reflection of observation chunks. Its output budget (`max_tokens`) follows what it compresses,
not one setting for every call: an observation of a 2,000-token stretch needs a few hundred
tokens, and a budget of thousands only lets a model that rambles ramble longer (on a local
server, minutes of writing for an answer that is then refused). An answer that runs past its
budget is stopped by the server and refused like any unusable answer.

A compression is used only if the prompt gets smaller: an observation or reflection not
smaller than what it replaces is refused, and the model-free stub (or no compression) takes its
place. Sizes here are compared in one unit, the local estimate before calibration, so a
session's calibration factor cannot make a larger text look smaller.
"""

from __future__ import annotations

from scribe.context.tokens import estimate_text

from .answer import UnusableAnswer

# An observation keeps facts and exact identifiers, not output: a quarter of what it reads is
# room enough for a dense one (the scripted and real observers write a tenth to a fifth).
OBSERVATION_SHARE = 0.25
# The task lines and a few observations, whatever the stretch: the least a budget may be.
ANSWER_FLOOR = 128


def observer_max_tokens(stretch_tokens: int, configured: int) -> int:
    """The output budget of an observation of `stretch_tokens` (as the server counts them):
    a share of the stretch, at least ANSWER_FLOOR, at most `configured` (side_call_max_tokens)."""
    wanted = ANSWER_FLOOR + int(stretch_tokens * OBSERVATION_SHARE)
    return max(1, min(configured, wanted))


def reflector_max_tokens(condensed_tokens: int, configured: int) -> int:
    """The output budget of a reflection of `condensed_tokens`: what it condenses, since an
    answer that long could not be smaller and would be refused anyway (it is asked for a half,
    a third, a quarter; models overshoot a size they are given, and any answer smaller than its
    input is worth keeping)."""
    return max(1, min(configured, max(ANSWER_FLOOR, condensed_tokens)))


def chunk_tokens(text: str) -> int:
    """What an observation or reflection of `text` adds to the prompt, in the local estimate:
    its text and the `<observations ...>` lines render wraps it in."""
    return estimate_text(text) + 12


def require_smaller(text: str, replaced_tokens: int, what: str) -> int:
    """The size of `text` as a chunk when it is smaller than the `replaced_tokens` (same unit) it
    would stand for; UnusableAnswer otherwise: using it would make the prompt grow."""
    size = chunk_tokens(text)
    if size >= replaced_tokens:
        raise UnusableAnswer(f"the {what} ({size} tokens) is not smaller than what it replaces "
                             f"({replaced_tokens} tokens)")
    return size
