"""Text from outside (tool output, file contents, model text, file names, tool arguments, log
lines) made harmless for a terminal: every control character other than newline and tab is
shown as a visible escape (`\\x1b`, `\\x07`, `\\x9b`, `\\r`), so a script in a repository, a
file, or a model's answer cannot clear the screen, set the window title, hide text or write the
clipboard (OSC 52) through scribe.

Why not leave it to rich: rich drops BEL, backspace, VT, FF and CR, but passes ESC, the C1
controls, NUL and DEL through, so `\\x1b[2J` still clears the screen, and an OSC 52 sequence
loses its BEL terminator and swallows the text after it.

Characters that change how the text around them reads without being seen are shown too, as
`<U+202E>`: the bidirectional controls (a file named `invoice\u202etxt.exe` would read
`invoiceexe.txt`), the zero-width and other invisible format characters, the byte-order mark,
the line and paragraph separators and the invisible fillers. Joiners that are part of an emoji
(a zero-width joiner between two pictographs, the tags of a flag) stay, so emoji keep their shape.

The log keeps the bytes as they were; only what is shown changes. JSON output is left alone:
json.dumps already escapes C0 controls, and a program reading it wants the exact text.

A rich console that does the same to what it renders is visible_console.py: rich is not
imported by what prints plain text (`scribe run`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# C0 controls except tab (\x09) and newline (\x0a), DEL, the C1 controls. A CR is kept only
# as part of CRLF, where it is dropped (the newline does the work).
CONTROL = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\r": "\\r"}

# The format characters (Unicode category Cf) that are not seen or that reorder text (all of them
# but the Arabic and Syriac number signs, which mark the figures after them), and the invisible
# others: the line and paragraph separators, the Hangul and Mongolian fillers. Unicode 14.
INVISIBLE_RANGES = ((0x00AD, 0x00AD), (0x061C, 0x061C), (0x115F, 0x1160), (0x180E, 0x180E), (0x200B, 0x200F),
                    (0x2028, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0x3164, 0x3164), (0xFEFF, 0xFEFF),
                    (0xFFA0, 0xFFA0), (0xFFF9, 0xFFFB), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3),
                    (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F))
INVISIBLE = re.compile("[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in INVISIBLE_RANGES) + "]")
# An emoji's own joiners: ZWJ between two pictographs (a family, a profession), tag characters
# ending in CANCEL TAG after a black flag (the flags of England, Scotland, Wales).
EMOJI_JOINS = re.compile("(?<=[\U0001f000-\U0001faff\u2600-\u27bf\ufe0f\U0001f3fb-\U0001f3ff])\u200d"
                          "(?=[\U0001f000-\U0001faff\u2600-\u27bf])"
                          "|(?<=\U0001f3f4)[\U000e0020-\U000e007e]+\U000e007f")
# What `visible` writes for a character it shows: the text a test or a reader may look for.
MARK = re.compile(r"<U\+[0-9A-F]{4,6}>")


def mark_of(char: str) -> str:
    """How an invisible character is written out: `<U+202E>`."""
    return f"<U+{ord(char):04X}>"


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def invisible_runs(text: str) -> Iterator[tuple[str, bool]]:
    """`text` in order as runs of what is shown as it is (False) and single characters shown as
    a mark (True): what a page marks its own way."""
    at = 0
    joins = [(m.start(), m.end()) for m in EMOJI_JOINS.finditer(text)] if INVISIBLE.search(text) else []
    for match in INVISIBLE.finditer(text):
        if any(start <= match.start() < end for start, end in joins):
            continue
        if match.start() > at:
            yield text[at:match.start()], False
        yield match.group(), True
        at = match.end()
    if at < len(text):
        yield text[at:], False


def _marked(text: str) -> str:
    if not INVISIBLE.search(text):
        return text
    return "".join(mark_of(piece) if invisible else piece for piece, invisible in invisible_runs(text))


def visible(text: str) -> str:
    """`text` with each control character other than newline and tab written out visibly, and
    each invisible or reordering character as `<U+…>`."""
    return _marked(CONTROL.sub(_shown, text))


class VisibleStream:
    """`visible` for text that arrives in pieces (a streamed answer): a CR at the end of one
    piece waits for the next, so a CRLF split between two pieces is still a plain newline (and
    a zero-width joiner, so an emoji split between two pieces keeps its shape)."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        # A joiner at the end may join an emoji to one in the next piece.
        if text.endswith("\r"):
            text, self._held = text[:-1], "\r"
        elif text.endswith("\u200d"):  # with what it follows, which the joiner is looked at with
            text, self._held = text[:-2], text[-2:]
        return visible(text)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return visible(held)
