"""The live area's drawing: lines that fit the terminal whatever it counts, and a redraw that
starts where the last drawing starts now, even after the terminal was resized.

rich's own live area pads each line to the full width and, to redraw, goes up one row per line
it drew. Both break when the terminal and rich count a line differently: rich counts 👍🏽 as
one 2-cell character, a terminal that draws the skin tone apart (tmux) as two, so a padded line
wraps and the redraw starts a row too low, leaving a copy of the top line in the scrollback. And
a terminal that rewraps its lines on a resize (tmux, VTE, kitty, iTerm2) turns each long line of
the area into several rows, which a redraw counting lines leaves behind.

So each line here is drawn at most one cell short of the width by the larger of the two counts
(cropped if need be: the area is transient, the answer is printed whole when it is complete),
ends with an erase to the end of the line instead of padding, and a redraw erases and goes up
as many rows as the lines drawn take at the width the terminal has now.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Iterable

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.control import Control
from rich.live import Live
from rich.live_render import LiveRender
from rich.segment import ControlType, Segment

ERASE_LINE_END = "\x1b[K"
# Row by row, not to the end of the screen: a terminal may take an erase from the top-left
# corner for a clear and keep a copy of the screen in its scrollback (tmux's scroll-on-clear).
ERASE_LINE, UP = "\x1b[2K", "\x1b[A"


@functools.cache
def _codepoint_cells(char: str) -> int:
    """A code point's cells as wcwidth counts them, which is what tmux and many terminals do:
    marks and format characters none, wide and fullwidth ones (a skin-tone modifier too) two."""
    if unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def terminal_cells(text: str) -> int:
    """The cells `text` may take in a terminal: the larger of rich's count (by grapheme: 👍🏽 is
    2) and the sum over its code points (what a terminal that draws the modifier apart counts:
    4)."""
    return max(cell_len(text), sum(_codepoint_cells(char) for char in text))


def rows_taken(cells: Iterable[int], width: int) -> int:
    """The rows lines of these cell counts take in a terminal `width` wide that wraps them."""
    return sum(max(1, -(-count // max(width, 1))) for count in cells)


def fitted(line: list[Segment], limit: int) -> tuple[list[Segment], int]:
    """`line` cropped to `limit` terminal cells, without its trailing padding; and its cells."""
    out: list[Segment] = []
    used = 0
    for segment in line:
        if segment.control:
            out.append(segment)
            continue
        cells = terminal_cells(segment.text)
        if used + cells <= limit:
            out.append(segment)
            used += cells
            continue
        kept = ""
        for char in segment.text:  # code point by code point: the sum only grows
            if used + terminal_cells(kept + char) > limit:
                break
            kept += char
        out.append(Segment(kept, segment.style))
        break
    while out and not out[-1].control and _unshaded(out[-1]) and not out[-1].text.rstrip(" "):
        out.pop()
    if out and not out[-1].control and _unshaded(out[-1]):
        out[-1] = Segment(out[-1].text.rstrip(" "), out[-1].style)
    return out, sum(terminal_cells(s.text) for s in out if not s.control)


def _unshaded(segment: Segment) -> bool:
    """A segment whose spaces show nothing (no background): padding that may go."""
    return segment.style is None or segment.style.bgcolor is None and not segment.style.reverse


def _control(text: str) -> Control:
    control = Control()
    control.segment = Segment(text, None, [(ControlType.CURSOR_UP, 0)])  # marked as control: passed as is
    return control


class FittedLiveRender(LiveRender):
    def __init__(self, console: Console, renderable: RenderableType) -> None:
        super().__init__(renderable)
        self.console = console
        self._drawn: list[int] = []  # the cells of each line last drawn

    def position_cursor(self) -> Control:
        """To the start of the last drawing, each row it takes now erased."""
        if not self._drawn:
            return Control()
        return _control("\r" + ERASE_LINE + (UP + ERASE_LINE) * (rows_taken(self._drawn, self.console.width) - 1))

    def restore_cursor(self) -> Control:
        """As position_cursor, from the line below the drawing (where rich leaves the cursor)."""
        if not self._drawn:
            return Control()
        return _control("\r" + (UP + ERASE_LINE) * rows_taken(self._drawn, self.console.width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        limit = max(options.max_width - 1, 1)
        lines = console.render_lines(self.renderable, options.update_width(limit), pad=False)
        lines = lines[-max(options.size.height - 1, 1):]
        self._drawn = []
        self._shape = (limit, len(lines))
        for number, line in enumerate(lines):
            shown, cells = fitted(line, limit)
            self._drawn.append(cells)
            yield from shown
            yield Segment(ERASE_LINE_END, None, [(ControlType.ERASE_IN_LINE, 0)])
            if number < len(lines) - 1:
                yield Segment.line()


def fitted_live(console: Console, renderable: RenderableType) -> Live:
    """A transient rich Live area drawn by FittedLiveRender (rich builds its own in __init__;
    the live area has no other seam for it)."""
    live = Live(renderable, console=console, transient=True, refresh_per_second=10,
                redirect_stdout=False, redirect_stderr=False)
    live._live_render = FittedLiveRender(console, renderable)
    return live


class Unpadded:
    """A renderable printed without the spaces rich pads its lines with to the full width: a
    line the terminal counts wider than rich does would wrap on them into an empty row."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in console.render_lines(self.renderable, options, pad=False):
            yield from fitted(line, 10**9)[0]
            yield Segment.line()
