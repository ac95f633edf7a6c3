"""A side call's answer as a model wrote it, before a reader keeps what it means.

Observer, reflector and curator answers share the ways models dress text up: Windows line
endings, a code fence around the whole answer, list markers of every kind, a last line cut off
by max_tokens, a refusal instead of an answer. This module undoes those; each kind's reader
(memory/observations.py for the observer and reflector, memory/notes_reader.py for the curator)
decides what the remaining lines mean and writes them in the project's one canonical form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class UnusableAnswer(ValueError):
    """A side call answered with nothing that can be kept; the message says why, for the log."""


@dataclass(frozen=True)
class Answer:
    """The text of a side call's answer and why the model stopped (`max_tokens`, `refusal`, ...)."""

    text: str
    stop_reason: str | None = None

    @property
    def cut(self) -> bool:
        """The model was stopped by max_tokens: whatever it was writing last is unfinished."""
        return self.stop_reason == "max_tokens"


# A list marker before a line's content: "- ", "* ", "+ ", "• ", "1. ", "1) ". A "*" or "-"
# needs the space after it, so "**bold**" and "-> arrow" are not markers.
_MARKER = re.compile(r"^(?:[-*+•‣◦▪–]|\d{1,3}[.)])\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)[\w+-]*\s*$")
# Characters that no reader wants: a byte-order mark, zero-width spaces and joiners at a line's edges.
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"
_DECLINED = re.compile(
    r"^(?:i'?m sorry|i am sorry|sorry,|i can(?:no|')t|i cannot|i am unable|i'?m unable|i won'?t|i will not|"
    r"as an ai|unfortunately,? i)", re.IGNORECASE)


def nothing_to_read(answer: Answer) -> str | None:
    """Why an answer cannot hold anything before reading a line of it, or None."""
    if answer.stop_reason == "refusal":
        return "the model refused to answer (stop_reason refusal)"
    if not answer.text.strip():
        return "the answer is empty" + (" (cut at max_tokens)" if answer.cut else "")
    return None


def declined(text: str) -> str | None:
    """A refusal written as a sentence ("I'm sorry, but I can't ..."): the reason to log, or None."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if _DECLINED.match(first):
        return f"the model declined: {first[:120]!r}"
    return None


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def answer_lines(answer: Answer) -> list[str]:
    """The answer's lines without line-ending noise and fence lines. When max_tokens stopped the
    model mid-line (no newline at the end), that last, unfinished line is left out: half a fact
    can say the opposite of the whole one."""
    text = _newlines(answer.text)
    lines = text.split("\n")
    if answer.cut and not text.endswith("\n"):
        lines = lines[:-1]
    return [line.strip(_INVISIBLE).rstrip() for line in lines if not _FENCE.match(line)]


def unfinished_line(answer: Answer) -> bool:
    """True when `answer_lines` left out a line cut by max_tokens."""
    text = _newlines(answer.text)  # as answer_lines reads it, or the two disagree on a lone \r
    return answer.cut and bool(text.strip()) and not text.endswith("\n") and bool(text.split("\n")[-1].strip())


def without_marker(line: str) -> tuple[int, str]:
    """(indent, the line without leading space and its list marker, if any)."""
    body = line.lstrip()
    indent = len(line) - len(body)
    return indent, _MARKER.sub("", body, count=1)
