"""`scribe log list`: the sessions of this workspace (or all of them), with their figures."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from scribe.context.stats import SessionSummary, damage
from scribe.log.store import SessionFile

from .common import (
    console,
    hit_rate,
    indexed_scope,
    local_time,
    log_command,
    open_index,
    print_json,
    spent,
)
from .table import Column, fitted, say_left_out, show

if TYPE_CHECKING:
    from scribe.log.index import IndexedSession


def list_sessions(
    all_: Annotated[bool, typer.Option("--all", "-a", help="Every session under the state folder, "
                                       "whatever workspace it was started in.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array of sessions.")] = False,
    empty: Annotated[bool, typer.Option("--empty", help="Also list the sessions in which nothing was asked and "
                                        "no model was called (opened, then left).")] = False,
) -> None:
    """List sessions, oldest first: id, started, last activity, turns, model calls, prompt tokens
    (input + cache read + cache write), cache hit rate and cost. A sub-agent's session is listed
    under its parent's. Sessions in which nothing was asked and no model called are left out
    (--empty lists them)."""
    with log_command(), open_index() as index:
        every = [_row(found, index.session(found.id)) for found in indexed_scope(index, all_)]
        rows = as_tree(every if empty else [r for r in every if not _empty(r)])
        if len(rows) < len(every):
            left = len(every) - len(rows)
            print(f"scribe: note: {left} session{'s' * (left != 1)} in which nothing was asked and no model was "
                  "called left out (--empty lists them)", file=sys.stderr)
        if as_json:
            print_json([r.as_dict() for r in rows])
            return
        if not rows:
            if not every:
                print("scribe: no sessions yet" + ("" if all_ else " in this workspace (--all lists every one)"),
                      file=sys.stderr)
            return
        _print(rows, all_)


def as_tree(rows: list[SessionSummary]) -> list[SessionSummary]:
    """Each sub-agent's session right after its parent's (where its parent is listed), in order."""
    listed = {r.id for r in rows}
    children: dict[str, list[SessionSummary]] = {}
    for r in rows:
        if r.parent in listed:
            children.setdefault(r.parent, []).append(r)
    out: list[SessionSummary] = []

    def add(row: SessionSummary) -> None:
        out.append(row)
        for child in children.get(row.id, []):
            add(child)

    for r in rows:
        if r.parent not in listed:
            add(r)
    return out


def _empty(row: SessionSummary) -> bool:
    """Nothing was asked and no model called: a REPL opened and left, say. A damaged log is
    never empty: what is wrong with it is worth a row."""
    return not row.turns and not row.figures.calls and row.damaged is None


def _row(found: SessionFile, indexed: IndexedSession | None) -> SessionSummary:
    """A session's row from the index (log/index.py), which has just folded in whatever its
    log gained: no event is read here. A log that does not begin with a session event is
    summed over its events all the same, its last line counted as skipped when torn."""
    assert indexed is not None  # indexed_scope brought every session it returns into the index
    i = indexed
    if not i.is_session:
        return SessionSummary(found.id, None, i.first_ts, i.last_ts, i.events, i.turns, i.figures,
                              damage(found.damaged, i.skipped + i.torn, False))
    return SessionSummary(found.id, i.session_cwd, i.session_created, i.last_ts, i.events, i.turns, i.figures,
                          damage(found.damaged, i.skipped, i.torn), parent=i.parent)


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
        cells.append([f"└ {r.id}" if r.parent is not None else r.id, local_time(r.started, seconds=False), local_time(r.last_activity, seconds=False),
                      str(r.turns), str(f.calls), f"{f.prompt_tokens:,}", hit_rate(f), spent(f, f.cost_usd),
                      *([r.cwd or "?"] if with_cwd else []), *([r.damaged or ""] if damaged else [])])
    out = console()
    table, hidden = fitted(out, columns, cells)
    show(out, table)
    say_left_out(hidden, out.width)
