"""`scribe log search`: a regular expression across sessions, grep-like."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from scribe.agent.config import find_workspace, load_settings
from scribe.log.jsonl import LogError
from scribe.log.search import Hit, search
from scribe.tools.pattern import BoundedPattern, PatternError, PatternTooSlow

from ..errors import EXIT_FAILED, EXIT_USAGE, fail
from ..visible import visible
from .common import console, load, log_command, print_json, resolve_session, sessions_in_scope


def search_logs(
    pattern: Annotated[str, typer.Argument(help="A Python regular expression, matched line by line.")],
    all_: Annotated[bool, typer.Option("--all", "-a", help="Search every session under the state folder.")] = False,
    session: Annotated[str | None, typer.Option("--session", "-s", help="Only this session (id or unique "
                                                "prefix).")] = None,
    ignore_case: Annotated[bool, typer.Option("--ignore-case", "-i", help="Match regardless of case.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array of matching lines.")] = False,
) -> None:
    """Search user and assistant text, tool calls and outputs, observations, reflections, file
    changes and errors. Prints session id, seq, event type and each matching line (trimmed).
    Exit 0 when something matched, 1 when nothing did, 2 on a bad pattern or one whose matching
    takes longer than regex_timeout_s (5 s by default)."""
    with log_command():
        try:
            regex = BoundedPattern(pattern, load_settings(find_workspace(Path.cwd())).regex_timeout_s, ignore_case)
        except PatternError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        targets = [resolve_session(session)] if session else sessions_in_scope(all_)
        rows: list[dict[str, Any]] = []
        matched = 0
        out = None if as_json else console()
        for found in targets:
            try:
                events = load(found, notes=False).events
            except LogError as exc:
                print(f"scribe: note: {exc}", file=sys.stderr)
                continue
            try:
                for hit in search(events, regex):
                    matched += 1
                    if out is None:
                        rows.append({"session_id": found.id, **hit.as_dict()})
                    else:
                        _print_hit(out, found.id, hit)
            except PatternTooSlow as exc:
                raise fail(str(exc), EXIT_USAGE) from None
        if as_json:
            print_json(rows)
        if not matched:
            raise typer.Exit(EXIT_FAILED)


def _print_hit(out: Any, session_id: str, hit: Hit) -> None:
    from rich.text import Text

    line = Text(f"{session_id} ", style="dim")
    line.append(f"{hit.seq:>5} ", style="bold")
    where = hit.type if hit.field in ("text", "output") else f"{hit.type}:{hit.field.removeprefix('tool_use ')}"
    line.append(f"{where:<12} ", style="cyan")
    # The log's text as it is, its control characters shown visibly, the match highlighted.
    line.append(visible(hit.line[:hit.start]))
    line.append(visible(hit.line[hit.start:hit.end]), style="bold red")
    line.append(visible(hit.line[hit.end:]))
    out.print(line, soft_wrap=True)
