"""`scribe log stats`: what a session's model calls cost, and how much its memory compresses."""

from __future__ import annotations

from typing import Annotated

import typer

from scribe.agent.pricing import price_usage
from scribe.memory.stats import Figures, SessionStats, session_stats

from .common import (
    SESSION_HELP,
    console,
    load,
    log_command,
    money,
    percent,
    print_json,
    resolve_session,
)


def stats(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as one JSON object.")] = False,
) -> None:
    """Model calls by purpose, tokens (input, cache read, cache write, output), cache hit rate,
    cost and what the same calls would have cost with no caching, and the compression ratio of
    the observations. Every figure comes from the log's usage events, as the server billed them."""
    with log_command():
        found = resolve_session(session)
        figures = session_stats(load(found).events, price_usage)
        if as_json:
            print_json({"session_id": found.id, "log": str(found.path), **figures.as_dict()})
            return
        _print(found.id, figures)


def _print(session_id: str, figures: SessionStats) -> None:
    from rich.table import Table

    out = console()
    out.print(f"session {session_id}", style="bold")
    table = Table()
    table.add_column("purpose")
    for name in ("calls", "input", "cache read", "cache write", "output", "hit rate", "cost", "no-cache cost"):
        table.add_column(name, justify="right")

    def row(name: str, f: Figures) -> list[str]:
        return [name, f"{f.calls:,}", f"{f.input:,}", f"{f.cache_read:,}", f"{f.cache_write:,}", f"{f.output:,}",
                percent(f.hit_rate), money(f.cost_usd), money(f.uncached_cost_usd)]

    for purpose, f in figures.by_purpose.items():
        table.add_row(*row(purpose, f))
    if len(figures.by_purpose) != 1:
        table.add_row(*row("total", figures.total), style="bold")
    out.print(table)

    total = figures.total
    if total.calls:
        saved = total.uncached_cost_usd - total.cost_usd
        share = saved / total.uncached_cost_usd if total.uncached_cost_usd else 0.0
        out.print(f"prompt tokens: {total.prompt_tokens:,}, {percent(total.hit_rate)} read from the cache; "
                  f"caching saved {money(saved)} ({percent(share)}) against no caching")
        out.print("prices: each model's list prices from agent/pricing.py (input, 5-minute cache write, "
                  "cache read, output)", style="dim")
    else:
        out.print("no model calls yet")
    c = figures.compression
    if c.observations:
        out.print(f"compression: {c.observations} observations stand for {c.raw_tokens:,} raw tokens in "
                  f"{c.observation_tokens:,} ({c.ratio:.1f}x)")
    else:
        out.print("compression: no observations yet")
    if c.reflections:
        out.print(f"reflections: {c.reflections}, {c.reflection_tokens:,} tokens")
