"""Text from outside (tool output, file contents, model text, file names, tool arguments, log
lines) made harmless for a terminal: every control character other than newline and tab is
shown as a visible escape (`\\x1b`, `\\x07`, `\\x9b`, `\\r`), so a script in a repository, a
file, or a model's answer cannot clear the screen, set the window title, hide text or write the
clipboard (OSC 52) through scribe.

Why not leave it to rich: rich drops BEL, backspace, VT, FF and CR, but passes ESC, the C1
controls, NUL and DEL through, so `\\x1b[2J` still clears the screen, and an OSC 52 sequence
loses its BEL terminator and swallows the text after it.

The log keeps the bytes as they were; only what is shown changes. JSON output is left alone:
json.dumps already escapes C0 controls, and a program reading it wants the exact text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

# C0 controls except tab (\x09) and newline (\x0a), DEL, the C1 controls. A CR is kept only
# as part of CRLF, where it is dropped (the newline does the work).
_CONTROL = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def visible(text: str) -> str:
    """`text` with each control character other than newline and tab written out visibly."""
    return _CONTROL.sub(_shown, text)


class VisibleStream:
    """`visible` for text that arrives in pieces (a streamed answer): a CR at the end of one
    piece waits for the next, so a CRLF split between two pieces is still a plain newline."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        text = self._held + piece
        self._held = ""
        if text.endswith("\r"):
            text, self._held = text[:-1], "\r"
        return visible(text)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return visible(held)


class VisibleConsole(Console):
    """A rich console that writes out visibly any control character left in the text it
    renders: the second line of defence for text that reached a renderable without passing
    through `visible` (rich has already dropped BEL and CR by then, but ESC and the C1
    controls would still drive the terminal). Segments rich itself marks as control (cursor
    movement for the live area) are its own and pass unchanged."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)
