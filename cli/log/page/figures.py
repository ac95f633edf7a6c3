"""The session's figures at the top of the page: `scribe log stats`'s table and lines, in the
same words (cli/log/stats.py makes them), and the few totals people look for first."""

from __future__ import annotations

from html import escape

from scribe.context.stats import SessionStats

from ..common import hit_rate, spent
from ..stats import COLUMNS, PRICES_NOTE, cells, rows, summary_lines


def figures_html(stats: SessionStats) -> str:
    head = "".join(f'<th scope="col">{escape(c)}</th>' for c in COLUMNS)
    body = "".join(
        f'<tr class="{"total" if name == "total" else "p-" + escape(name, quote=True)}"><th scope="row">{escape(name)}</th>'
        + "".join(f"<td>{escape(c)}</td>" for c in cells(f)) + "</tr>"
        for name, f in rows(stats))
    lines = summary_lines(stats)
    if stats.total.calls:
        lines.insert(1, PRICES_NOTE)
    return (f'<div class="scroll"><table class="figures" id="figures"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            f'</table></div>' + "".join(f"<p>{escape(line)}</p>" for line in lines))


def headline(stats: SessionStats) -> str:
    """The figures people ask first, large."""
    total = stats.total
    cells_ = [("cost", spent(total, total.cost_usd)), ("model calls", f"{total.calls:,}"),
              ("read from the cache", hit_rate(total)),
              ("saved by caching", spent(total, total.uncached_cost_usd - total.cost_usd))]
    return '<dl class="headline">' + "".join(
        f"<div><dt>{escape(k)}</dt><dd>{escape(v)}</dd></div>" for k, v in cells_) + "</dl>"
