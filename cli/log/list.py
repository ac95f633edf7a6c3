"""`scribe log list`: the sessions of this workspace (or all of them), with their figures."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from scribe.agent.pricing import PriceBook
from scribe.context.checkpoint import NotASessionLog, digest_of
from scribe.log.jsonl import LogError
from scribe.context.stats import SessionSummary, damage, summarize, summarize_digest
from scribe.log.store import SessionFile

from .common import (
    console,
    load,
    local_time,
    log_command,
    percent,
    priced_money,
    print_json,
    sessions_in_scope,
    workspace_prices,
)
from .table import Column, fitted, say_left_out


def list_sessions(
    all_: Annotated[bool, typer.Option("--all", "-a", help="Every session under the state folder, "
                                       "whatever workspace it was started in.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array of sessions.")] = False,
) -> None:
    """List sessions, oldest first: id, started, last activity, turns, model calls, prompt tokens
    (input + cache read + cache write), cache hit rate and cost."""
    with log_command():
        rows: list[SessionSummary] = []
        prices = workspace_prices()
        for found in sessions_in_scope(all_):
            try:
                rows.append(_row(found, prices))
            except LogError as exc:  # one unreadable file must not hide the others
                print(f"scribe: note: {exc}", file=sys.stderr)
        if as_json:
            print_json([r.as_dict() for r in rows])
            return
        if not rows:
            print("scribe: no sessions yet" + ("" if all_ else " in this workspace (--all lists every one)"),
                  file=sys.stderr)
            return
        _print(rows, all_)


def _row(found: SessionFile, prices: PriceBook) -> SessionSummary:
    """A session's figures from its checkpoint and the lines after it (context/checkpoint.py), or,
    without a checkpoint that still fits, from one streaming read; a log that is not a session's
    from what can be read of it. Reading only: nothing is written, not even a checkpoint."""
    try:
        log = digest_of(found.path)
    except NotASessionLog:
        read = load(found, notes=False)
        return summarize(found.id, read.events, prices.price_usage, damage(found.damaged, len(read.problems), False))
    except OSError as exc:
        raise LogError(f"cannot read {found.path}: {exc.strerror or exc}") from None
    skipped = sum(p.kind != "torn" for p in log.problems)
    return summarize_digest(found.id, log.header, log.digest, prices.price_usage,
                            damage(found.damaged, skipped, log.torn), prices.key)


def _print(rows: list[SessionSummary], with_cwd: bool) -> None:
    columns = [Column("session"), Column("started", keep=1), Column("last activity", keep=7),
               Column("turns", "right", keep=5), Column("calls", "right", keep=3),
               Column("input tokens", "right", keep=2), Column("hit rate", "right", keep=4),
               Column("cost", "right")]
    if with_cwd:
        columns.append(Column("workspace", keep=6, wraps=True))
    damaged = any(r.damaged for r in rows)
    if damaged:
        columns.append(Column("damaged", wraps=True))
    cells: list[list[str]] = []
    for r in rows:
        f = r.figures
        cells.append([r.id, local_time(r.started, seconds=False), local_time(r.last_activity, seconds=False),
                      str(r.turns), str(f.calls), f"{f.prompt_tokens:,}", percent(f.hit_rate), priced_money(f, f.cost_usd),
                      *([r.cwd or "?"] if with_cwd else []), *([r.damaged or ""] if damaged else [])])
    out = console()
    table, hidden = fitted(out, columns, cells)
    out.print(table)
    say_left_out(hidden, out.width)
