"""A rich console that writes out visibly any control character or invisible character left in
the text it renders, as `visible` does (cli/visible.py): the REPL's and `scribe log`'s. Apart
from visible.py so that what prints plain text (`scribe run`) does not import rich."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.style import Style

from .visible import CONTROL, INVISIBLE, MARK, visible


class VisibleConsole(Console):
    """A rich console that writes out visibly any control character left in the text it
    renders: the second line of defence for text that reached a renderable without passing
    through `visible` (rich has already dropped BEL and CR by then, but ESC and the C1
    controls would still drive the terminal). Segments rich itself marks as control (cursor
    movement for the live area) are its own and pass unchanged."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
                continue
            text = visible(segment.text) if CONTROL.search(segment.text) or INVISIBLE.search(segment.text) \
                else segment.text
            yield from _dimmed_marks(text, segment.style)


_DIM = Style(dim=True)


def _dimmed_marks(text: str, style: Style | None) -> Iterable[Segment]:
    """The segment's text, with each `<U+…>` mark dimmed: it is shown, but is not the text."""
    at = 0
    for match in MARK.finditer(text):
        if match.start() > at:
            yield Segment(text[at:match.start()], style)
        yield Segment(match.group(), (style or Style()) + _DIM)
        at = match.end()
    if at < len(text) or not text:
        yield Segment(text[at:], style)
