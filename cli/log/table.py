"""Tables of figures that fit the terminal: whole columns are left out, never cut mid-value.

A session id cut to `20261201-154257-…` cannot be pasted back, and a cost cut to `$…` says
nothing; rich squeezes every column of a table that is too wide. So a table here is measured
first, and the columns the person needs least are dropped until it fits; the caller says which
went (`--json` always has every figure).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
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
    whole = _plain_widths(columns, rows) if plain else []
    while droppable and (_plain_width(columns, whole, shown) if plain
                         else natural_width(console, columns, rows, shown)) > console.width:
        shown.remove(droppable.pop(0))
    hidden = [columns[i].name for i in range(len(columns)) if i not in shown]
    if plain and _plain_width(columns, whole, shown, wrapped=False) <= console.width:
        return PlainTable([columns[i] for i in shown], [[row[i] for i in shown] for row in rows],
                          [whole[i] for i in shown]), hidden
    return _table([columns[i] for i in shown], rows, shown, bold_rows), hidden


class PlainTable:
    """The table rich would draw, for a console with no styles whose every cell is printable
    ASCII and fits unwrapped: the same characters, written line by line. Rich measures and
    lays out every cell as a renderable, some 6 ms a row: ten thousand sessions took a minute."""

    def __init__(self, columns: list[Column], rows: list[list[str]], widths: list[int]) -> None:
        self.columns, self.rows, self.widths = columns, rows, widths  # widths: of each column's longest text

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment

        yield from (Segment(line) for line in self.lines())

    def lines(self) -> Iterator[str]:
        """Each line of the table, its newline included."""
        widths = self.widths
        # one format for every line: each cell padded with spaces, as ljust or rjust pads it
        line = "  ".join(f"{{:{'>' if c.justify == 'right' else '<'}{w}}}" for c, w in zip(self.columns, widths,
                                                                                           strict=True)) + "\n"
        yield line.format(*(c.name for c in self.columns))
        yield "─" * (sum(widths) + 2 * (len(widths) - 1)) + "\n"
        for row in self.rows:
            yield line.format(*row)


def show(console: Any, table: Any) -> None:
    """Print a table `fitted` made: a PlainTable straight to stdout, the characters rich would
    write for it without rich's pass over each line (it has no style and fits the width)."""
    if isinstance(table, PlainTable) and console.file is sys.stdout:
        sys.stdout.writelines(table.lines())
        sys.stdout.flush()
    else:
        console.print(table)


def _plain(columns: list[Column], rows: list[list[str]]) -> bool:
    """Every header and cell printable ASCII with no space at either end (rich trims those)."""
    def simple(cells: list[str]) -> bool:
        # with tabs between the cells (no cell holds one once it is printable), a space beside a
        # tab is a space at a cell's end: printable ASCII has no other blank that rich trims
        text, joined = "".join(cells), "\t".join(cells)
        return (text.isascii() and text.isprintable() and " \t" not in joined and "\t " not in joined
                and joined[:1] != " " and joined[-1:] != " ")

    return simple([c.name for c in columns]) and all(simple(row) for row in rows)


def _plain_widths(columns: list[Column], rows: list[list[str]]) -> list[int]:
    """The length of each column's longest text, its header's included: of printable ASCII,
    the terminal columns it takes."""
    return [max(len(c.name), max((len(row[i]) for row in rows), default=0)) for i, c in enumerate(columns)]


def _plain_width(columns: list[Column], whole: list[int], shown: list[int], *, wrapped: bool = True) -> int:
    """`natural_width` of printable ASCII cells whose longest are `whole`, counted rather than
    laid out: free text counted at WRAP_WIDTH unless `wrapped=False`."""
    def width(i: int) -> int:
        return min(whole[i], WRAP_WIDTH) if wrapped and columns[i].wraps else whole[i]

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
