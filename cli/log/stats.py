"""`scribe log stats`: what a session's model calls cost, and how much its memory compresses."""

from __future__ import annotations

from typing import Annotated

import typer

from scribe.context.stats import Figures, SessionStats, session_stats

from .common import (
    SESSION_HELP,
    console,
    load,
    log_command,
    percent,
    priced_money,
    print_json,
    resolve_session,
    workspace_prices,
)
from .table import Column, fitted, say_left_out


def stats(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as one JSON object.")] = False,
) -> None:
    """Model calls by purpose, tokens (input, cache read, cache write, output), cache hit rate,
    cost and what the same calls would have cost with no caching, and the compression ratio of
    the observations. Every figure comes from the log's usage events, as the server billed them."""
    with log_command():
        found = resolve_session(session)
        figures = session_stats(load(found).events, workspace_prices().price_usage)
        if as_json:
            print_json({"session_id": found.id, "log": str(found.path), **figures.as_dict()})
            return
        _print(found.id, figures)


COLUMNS = ("purpose", "calls", "input", "cache read", "cache write", "output", "hit rate", "cost", "no-cache cost")
PRICES_NOTE = ("prices: each model's list prices from agent/pricing.py (input, 5-minute cache write, cache read, "
               "output), or its [prices.MODEL] table in the config; a model with neither is unpriced")


def cells(f: Figures) -> list[str]:
    """One row of the table after its purpose: the same words wherever the figures are shown."""
    return [f"{f.calls:,}", f"{f.input:,}", f"{f.cache_read:,}", f"{f.cache_write:,}", f"{f.output:,}",
            percent(f.hit_rate), priced_money(f, f.cost_usd), priced_money(f, f.uncached_cost_usd)]


def rows(figures: SessionStats) -> list[tuple[str, Figures]]:
    """(purpose, figures) per row; a total row when there is more (or less) than one purpose."""
    out = list(figures.by_purpose.items())
    if len(figures.by_purpose) != 1:
        out.append(("total", figures.total))
    return out


def summary_lines(figures: SessionStats) -> list[str]:
    """What the table does not say: the cache's share and saving, the compression, and how the
    memory's side calls fared."""
    lines: list[str] = []
    total = figures.total
    if total.calls and not total.priced:
        models = sorted({c.model for c in figures.calls if c.cost_usd is None})
        lines.append(f"prompt tokens: {total.prompt_tokens:,}, {percent(total.hit_rate)} read from the cache; "
                     f"{', '.join(models)} {'has' if len(models) == 1 else 'have'} no price: its calls are "
                     f"{UNPRICED_NOTE}")
    elif total.calls:
        saved = total.uncached_cost_usd - total.cost_usd
        share = saved / total.uncached_cost_usd if total.uncached_cost_usd else 0.0
        lines.append(f"prompt tokens: {total.prompt_tokens:,}, {percent(total.hit_rate)} read from the cache; "
                     f"caching saved {priced_money(total, saved)} ({percent(share)}) against no caching")
    else:
        lines.append("no model calls yet")
    c = figures.compression
    if c.observations:
        lines.append(f"compression: {c.observations} observations stand for {c.raw_tokens:,} raw tokens in "
                     f"{c.observation_tokens:,} ({c.ratio:.1f}x)")
    else:
        lines.append("compression: no observations yet")
    if c.reflections:
        lines.append(f"reflections: {c.reflections}, {c.reflection_tokens:,} tokens")
    lines.append(f"memory: {figures.memory.summary()}")
    return lines


UNPRICED_NOTE = "shown as tokens and time, cost unpriced ([prices.MODEL] in the config prices it)"


# How readily a column is left out of a narrow terminal's table (0: never); see table.py.
KEEP = {"purpose": 0, "calls": 6, "input": 4, "cache read": 5, "cache write": 3, "output": 7, "hit rate": 2,
        "cost": 0, "no-cache cost": 1}


def _print(session_id: str, figures: SessionStats) -> None:

    out = console()
    out.print(f"session {session_id}", style="bold")
    columns = [Column(name, "left" if name == "purpose" else "right", keep=KEEP[name]) for name in COLUMNS]
    table_rows = rows(figures)
    bold = frozenset(i for i, (name, _) in enumerate(table_rows) if name == "total")
    table, hidden = fitted(out, columns, [[name, *cells(f)] for name, f in table_rows], bold_rows=bold)
    out.print(table)
    lines = summary_lines(figures)
    out.print(lines[0])
    if figures.total.calls:
        out.print(PRICES_NOTE, style="dim")
    for line in lines[1:]:
        out.print(line)
    say_left_out(hidden, out.width)
