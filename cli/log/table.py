"""Tables of figures that fit the terminal: whole columns are left out, never cut mid-value.

A session id cut to `20261201-154257-…` cannot be pasted back, and a cost cut to `$…` says
nothing; rich squeezes every column of a table that is too wide. So a table here is measured
first, and the columns the person needs least are dropped until it fits; the caller says which
went (`--json` always has every figure).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Column:
    name: str
    justify: Literal["left", "right"] = "left"
    # Dropped first when the table is too wide: the lowest `keep`; 0 is never dropped.
    keep: int = 0
    # Free text (a path, a reason) that may wrap; counted at `wrap_width` when fitting.
    wraps: bool = False


WRAP_WIDTH = 16


def fitted(console: Any, columns: list[Column], rows: list[list[str]], *,
           bold_rows: frozenset[int] = frozenset()) -> tuple[Any, list[str]]:
    """The rich table of `rows` under `columns`, with as many columns as fit `console`'s width,
    and the names of those left out (in the columns' order)."""
    shown = list(range(len(columns)))
    droppable = sorted((i for i, c in enumerate(columns) if c.keep), key=lambda i: (columns[i].keep, -i))
    plain = console.color_system is None and _plain(columns, rows)
    measure = _plain_width if plain else natural_width
    while droppable and measure(console, columns, rows, shown) > console.width:
        shown.remove(droppable.pop(0))
    hidden = [columns[i].name for i in range(len(columns)) if i not in shown]
    if plain and _plain_width(console, columns, rows, shown, wrapped=False) <= console.width:
        return PlainTable([columns[i] for i in shown], [[row[i] for i in shown] for row in rows]), hidden
    return _table([columns[i] for i in shown], rows, shown, bold_rows), hidden


class PlainTable:
    """The table rich would draw, for a console with no styles whose every cell is printable
    ASCII and fits unwrapped: the same characters, written line by line. Rich measures and
    lays out every cell as a renderable, some 6 ms a row: ten thousand sessions took a minute."""

    def __init__(self, columns: list[Column], rows: list[list[str]]) -> None:
        self.columns, self.rows = columns, rows

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        widths = [max([len(c.name)] + [len(row[i]) for row in self.rows]) for i, c in enumerate(self.columns)]
        yield Segment(self._line([c.name for c in self.columns], widths) + "\n")
        yield Segment("─" * (sum(widths) + 2 * (len(widths) - 1)) + "\n")
        for row in self.rows:
            yield Segment(self._line(row, widths) + "\n")

    def _line(self, cells: list[str], widths: list[int]) -> str:
        return "  ".join(cell.rjust(width) if column.justify == "right" else cell.ljust(width)
                         for cell, width, column in zip(cells, widths, self.columns, strict=True))


def _plain(columns: list[Column], rows: list[list[str]]) -> bool:
    """Every header and cell printable ASCII with no space at either end (rich trims those)."""
    def simple(text: str) -> bool:
        return text.isascii() and text.isprintable() and text == text.strip()

    return all(simple(c.name) for c in columns) and all(simple(cell) for row in rows for cell in row)


def _plain_width(console: Any, columns: list[Column], rows: list[list[str]], shown: list[int], *,
                 wrapped: bool = True) -> int:
    """`natural_width` of printable ASCII cells (one column of the terminal each), counted
    rather than laid out; `wrapped=False`: free text at its whole width."""
    def width(i: int) -> int:
        cut = WRAP_WIDTH if wrapped and columns[i].wraps else None
        return max([len(columns[i].name[:cut])] + [len(row[i][:cut]) for row in rows])

    return sum(width(i) for i in shown) + 2 * (len(shown) - 1)


def say_left_out(hidden: list[str], width: int) -> None:
    """One line on stderr naming the columns `fitted` left out, if any."""
    if hidden:
        print(f"scribe: note: {', '.join(hidden)} left out to fit {width} columns (--json has every figure)",
              file=sys.stderr)


def natural_width(console: Any, columns: list[Column], rows: list[list[str]], shown: list[int]) -> int:
    """How wide rich lays out the columns `shown` when nothing is squeezed; free-text columns
    are counted at WRAP_WIDTH, since they may wrap."""
    from rich.measure import Measurement

    clipped = [[row[i][:WRAP_WIDTH] if columns[i].wraps else row[i] for i in range(len(columns))] for row in rows]
    table = _table([columns[i] for i in shown], clipped, shown, frozenset())
    # Measured as if the terminal were unbounded: rich clamps a measurement to the width offered.
    return Measurement.get(console, console.options.update_width(1_000_000), table).maximum


def _table(columns: list[Column], rows: list[list[str]], shown: list[int], bold_rows: frozenset[int]) -> Any:
    from rich import box
    from rich.table import Table

    # No vertical rules: two spaces between columns, a rule under the header.
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for column in columns:
        table.add_column(column.name, justify=column.justify, no_wrap=not column.wraps,
                         overflow="fold" if column.wraps else "ellipsis")
    for number, row in enumerate(rows):
        table.add_row(*(row[i] for i in shown), style="bold" if number in bold_rows else None)
    return table
