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
    while droppable and natural_width(console, columns, rows, shown) > console.width:
        shown.remove(droppable.pop(0))
    table = _table([columns[i] for i in shown], rows, shown, bold_rows)
    return table, [columns[i].name for i in range(len(columns)) if i not in shown]


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
