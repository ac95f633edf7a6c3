"""`scribe log search`: a regular expression across sessions, grep-like."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import regex
import typer

from scribe.log.jsonl import LogError
from scribe.log.search import Hit, search
from scribe.settings.files import find_workspace
from scribe.settings.values import load_settings
from scribe.tools.pattern import BoundedPattern, PatternError, PatternTooSlow, cut_note

from ..exits import EXIT_FAILED, EXIT_USAGE, fail
from ..visible import visible
from .common import (
    console,
    indexed_scope,
    log_command,
    open_index,
    print_json,
    resolve_session,
    sessions_in_scope,
    streamed,
)


def search_logs(
    pattern: Annotated[str, typer.Argument(help="A Python regular expression, matched line by line (with "
                                           "--words: words).")],
    all_: Annotated[bool, typer.Option("--all", "-a", help="Search every session under the state folder.")] = False,
    session: Annotated[str | None, typer.Option("--session", "-s", help="Only this session (id or unique "
                                                "prefix).")] = None,
    ignore_case: Annotated[bool, typer.Option("--ignore-case", "-i", help="Match regardless of case.")] = False,
    words: Annotated[bool, typer.Option("--words", "-w", help="Find the events holding every one of these "
                                        "words (whole words, any case), through the index: fast on any "
                                        "size of log.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON array of matching lines.")] = False,
) -> None:
    """Search user and assistant text, tool calls and outputs, observations, reflections, file
    changes and errors. Prints session id, seq, event type and each matching line (trimmed).
    Exit 0 when something matched, 1 when nothing did, 2 on a bad pattern or one whose matching
    of a single line takes longer than regex_timeout_s (5 s by default)."""
    with log_command():
        out = None if as_json else console()
        rows: list[dict[str, Any]] = []

        def emit(session_id: str, hit: Hit) -> None:
            if out is None:
                rows.append({"session_id": session_id, **hit.as_dict()})
            else:
                _print_hit(out, session_id, hit)

        matched = _by_words(pattern, session, all_, emit) if words else _by_pattern(pattern, session, all_,
                                                                                      ignore_case, emit)
        if as_json:
            print_json(rows)
        if not matched:
            raise typer.Exit(EXIT_FAILED)


def _by_pattern(pattern: str, session: str | None, all_: bool, ignore_case: bool,
                emit: Callable[[str, Hit], None]) -> int:
    """Every session's events streamed past the pattern, whose budget is per line: a slow
    search of a large log is not taken for a pattern that backtracks."""
    try:
        regex = BoundedPattern(pattern, load_settings(find_workspace(Path.cwd())).regex_timeout_s, ignore_case,
                               each_search=True)
    except PatternError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    matched = 0
    for found in [resolve_session(session)] if session else sessions_in_scope(all_):
        try:
            with streamed(found, notes=False) as events:
                for hit in search(events, regex, found.id):
                    matched += 1
                    emit(found.id, hit)
        except LogError as exc:
            print(f"scribe: note: {exc}", file=sys.stderr)
        except PatternTooSlow as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    if regex.cut:
        print(f"scribe: note: {cut_note(regex.cut)}", file=sys.stderr)
    return matched


# What the index's tokenizer (unicode61) takes for a word: letters and digits, not underscores.
WORD = regex.compile(r"[^\W_]+")


def _by_words(text: str, session: str | None, all_: bool, emit: Callable[[str, Hit], None]) -> int:
    """The events the index finds holding every word, read back from their logs: each line that
    holds one of the words is a hit."""
    terms = WORD.findall(text)
    if not terms:
        raise fail(f"no words to search for in {text!r}", EXIT_USAGE)
    shown = "|".join(regex.escape(t) for t in terms)
    lines = BoundedPattern(rf"(?<![^\W_])(?:{shown})(?![^\W_])", 5.0, ignore_case=True, each_search=True)
    from scribe.log.index import EventsAt

    matched = 0
    with open_index() as index, EventsAt() as events:
        if session is not None:
            targets = [resolve_session(session)]
            index.refresh_one(targets[0].path)
        else:
            targets = indexed_scope(index, all_)
        paths = {t.id: t.path for t in targets}
        for session_id, seq, offset in index.word_hits(" ".join(f'"{t}"' for t in terms), list(paths)):
            event = events.at(paths[session_id], offset)
            if event is None or event.seq != seq:
                continue  # the log changed under the index since it was brought up to date
            for hit in search([event], lines, session_id):
                matched += 1
                emit(session_id, hit)
    return matched


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
