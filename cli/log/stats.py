"""`scribe log stats`: what a session's model calls cost, and how much its memory compresses."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from scribe.context.stats import PURPOSES, Compression, Figures, SessionStats, session_stats
from scribe.log.index import IndexedSession
from scribe.log.jsonl import read_first_record
from scribe.log.pricing import price_for
from scribe.log.store import SessionFile
from scribe.tools.textio import plural

from .common import (
    SESSION_HELP,
    console,
    hit_rate,
    indexed_scope,
    log_command,
    open_index,
    percent,
    priced_money,
    print_json,
    resolve_session,
    spent,
    streamed,
    workspace_prices,
    workspace_store,
)
from .json_calls import CallsOfLog, write_json
from .table import Column, fitted, say_left_out, show


class Grouping(StrEnum):
    day = "day"
    model = "model"
    session = "session"


def stats(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print every figure as one JSON object.")] = False,
    by: Annotated[Grouping | None, typer.Option("--by", help="Sum the calls of every session of this workspace "
                                                "(or of the one named) per day (local time), model or "
                                                "session, from the index.", show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", "-a", help="With --by: every session under the state folder.")]
    = False,
) -> None:
    """Model calls by purpose, tokens (input, cache read, cache write, output), cache hit rate,
    cost and what the same calls would have cost with no caching, and the compression ratio of
    the observations. Every figure comes from the log's usage events, as the server billed them.
    With --by day|model|session: the same figures summed across sessions."""
    with log_command():
        if by is not None:
            _grouped(by.value, session, all_, as_json)
            return
        found = resolve_session(session, "calls")
        figures = _from_index(found)
        price = workspace_prices().price_usage
        if figures is None:
            with streamed(found) as events:
                figures = session_stats(events, price, per_call=False)
        children = sub_agents(found)
        if as_json:
            # every call listed, read again from the log as the document is written
            document = {"session_id": found.id, "log": str(found.path), **figures.as_dict()}
            if children:
                document["children"] = [{"session_id": c.id, "log": c.path, "agent": agent_of(Path(c.path)),
                                         "usage": c.figures.as_dict()} for c in children]
                document["with_children"] = with_children(figures.total, children).as_dict()
            document["per_call"] = CallsOfLog(found.path, price, figures.total.calls)
            write_json(document)
            return
        _print(found.id, figures)
        if children:
            _print_children(figures.total, children)


COLUMNS = ("purpose", "calls", "input", "cache read", "cache write", "output", "hit rate", "cost", "no-cache cost")
PRICES_NOTE = ("prices: each model's list prices from log/pricing.py (input, 5-minute cache write, cache read, "
               "output), or its [prices.MODEL] table in the config; a model with neither is unpriced")


def cells(f: Figures) -> list[str]:
    """One row of the table after its purpose: the same words wherever the figures are shown."""
    t = f.tokens
    return [f"{f.calls:,}", f"{t.input:,}", f"{t.cache_read:,}", f"{t.cache_write:,}", f"{t.output:,}",
            hit_rate(f), spent(f, f.cost_usd), spent(f, f.uncached_cost_usd)]


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
        lines.append(f"prompt tokens: {total.prompt_tokens:,}, {percent(total.hit_rate)} read from the cache; "
                     f"{why_unpriced(figures.unpriced_models)}: its calls are {UNPRICED_NOTE}")
    elif total.calls:
        saved = total.uncached_cost_usd - total.cost_usd
        share = saved / total.uncached_cost_usd if total.uncached_cost_usd else 0.0
        lines.append(f"prompt tokens: {total.prompt_tokens:,}, {percent(total.hit_rate)} read from the cache; "
                     f"caching saved {priced_money(total, saved)} ({percent(share)}) against no caching")
    else:
        lines.append("no model calls yet")
    c, made = figures.compression, figures.memory
    if c.observations:
        lines.append(f"compression: {plural(c.observations, 'observation')}"
                     f"{model_free(c.observations - made.observer.made)} "
                     f"{'stands' if c.observations == 1 else 'stand'} for {c.raw_tokens:,} raw tokens "
                     f"in {c.observation_tokens:,} ({c.ratio:.1f}x)")
    else:
        lines.append("compression: no observations yet")
    if c.reflections:
        lines.append(f"reflections: {c.reflections}{model_free(c.reflections - made.reflector.made)}, "
                     f"{c.reflection_tokens:,} tokens")
    lines.append(f"memory: {made.summary()}")
    return lines


def model_free(count: int) -> str:
    """How many of the observations or reflections just counted were made without a model: the
    memory line counts what models made, so the two add up."""
    return f" ({count} of them model-free)" if count else ""


UNPRICED_NOTE = "shown as tokens and time, cost unpriced ([prices.MODEL] in the config prices it)"


def why_unpriced(models: set[str]) -> str:
    """Why calls of `models` have no price: a model with no list price, or one that has one, whose
    calls a server that is not Anthropic's answered (log/pricing.py)."""
    listed = sorted(m for m in models if price_for(m) is not None)
    others = sorted(m for m in models if price_for(m) is None)
    said = []
    if others:
        said.append(f"{', '.join(others)} {'has' if len(others) == 1 else 'have'} no price")
    if listed:
        said.append(f"{', '.join(listed)} answered by a server that is not Anthropic's "
                    f"{'has' if len(listed) == 1 else 'have'} no Claude price")
    return "; ".join(said)


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
    show(out, table)
    lines = summary_lines(figures)
    out.print(lines[0])
    if figures.total.calls:
        out.print(PRICES_NOTE, style="dim")
    for line in lines[1:]:
        out.print(line)
    say_left_out(hidden, out.width)


def sub_agents(found: SessionFile) -> list[IndexedSession]:
    """The sessions `found`'s task calls started, from the index (every log of the workspace
    brought up to date first); none where the index cannot stand for the logs."""
    _, store = workspace_store()
    if found.path.resolve().parent != store.sessions_dir.resolve():
        return []
    with open_index() as index:
        if index.in_memory:
            return []
        index.sessions(store)
        return index.children(found.id)


def with_children(own: Figures, children: list[IndexedSession]) -> Figures:
    """A session's calls and its sub-agents' together: what the work cost in all."""
    total = Figures()
    total.merge(own)
    for child in children:
        total.merge(child.figures)
    return total


def agent_of(log: Path) -> str | None:
    """A sub-agent's kind, as its session event names it."""
    parent = (read_first_record(log) or {}).get("parent")
    return str(parent.get("agent")) if isinstance(parent, dict) and parent.get("agent") else None


def _print_children(own: Figures, children: list[IndexedSession]) -> None:
    out = console()
    out.print(f"sub-agents ({len(children)}):", style="bold")
    for child in children:
        f = child.figures
        out.print(f"  {child.id}  {agent_of(Path(child.path)) or '?'}: {plural(f.calls, 'call')}, "
                  f"{hit_rate(f)} hit rate, {spent(f, f.cost_usd)}")
    total = with_children(own, children)
    out.print(f"with its sub-agents: {plural(total.calls, 'call')}, {spent(total, total.cost_usd)}", style="bold")


def _from_index(found: SessionFile) -> SessionStats | None:
    """The session's figures from the index (log/index.py), once it has folded in whatever the
    log gained: what reading the whole log gives (its calls not listed). None where the index
    does not stand for the log: a log outside this workspace's sessions, an index only in memory
    (a state folder that cannot be written: it would hold the whole log), or a log with lines
    skipped or torn (reading it names each of them on stderr)."""
    _, store = workspace_store()
    if found.path.resolve().parent != store.sessions_dir.resolve():
        return None
    with open_index() as index:
        if index.in_memory:
            return None
        index.refresh_one(found.path)
        held = index.session(found.id)
        kept = index.stats(found.id)
    if held is None or kept is None or held.skipped or held.torn:
        return None
    order = {p: i for i, p in enumerate(PURPOSES)}  # as session_stats orders them
    by_purpose = dict(sorted(kept.by_purpose.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    compression = Compression(kept.observations, kept.raw_tokens, kept.observation_tokens, kept.reflections,
                              kept.reflection_tokens)
    return SessionStats(total=kept.total, by_purpose=by_purpose, compression=compression, memory=kept.memory,
                        unpriced_models=kept.unpriced_models)


def _grouped(by: str, session: str | None, all_: bool, as_json: bool) -> None:
    """The calls of the sessions in scope summed per `by`, from the index: no log is read whole."""
    with open_index() as index:
        if session is not None:
            found = resolve_session(session)
            index.refresh_one(found.path)
            ids = [found.id]
        else:
            ids = [s.id for s in indexed_scope(index, all_)]
        groups = list(index.usage_groups(by, ids))
    total = Figures()
    for _, f in groups:
        total.merge(f)
    if as_json:
        print_json({"by": by, "groups": [{by: name, **f.as_dict()} for name, f in groups], "total": total.as_dict()})
        return
    out = console()
    columns = [Column(by)] + [Column(name, "right", keep=KEEP[name]) for name in COLUMNS[1:]]
    table_rows = [*groups, ("total", total)] if len(groups) != 1 else groups
    bold = frozenset({len(table_rows) - 1}) if len(groups) != 1 else frozenset()
    table, hidden = fitted(out, columns, [[name, *cells(f)] for name, f in table_rows], bold_rows=bold)
    show(out, table)
    if total.calls:
        out.print(PRICES_NOTE, style="dim")
    else:
        out.print("no model calls yet")
    say_left_out(hidden, out.width)
