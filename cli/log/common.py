"""What every `scribe log` command shares: finding the session, reading it, printing.

Nothing here imports the SDK (nor agent/opening.py, which does): these commands never call a
model, so they start in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer

from scribe.context.stats import Figures
from scribe.log.events import Event
from scribe.log.jsonl import LogError, LogRead, read_first_record, read_log, stream_log
from scribe.log.pricing import PriceBook
from scribe.log.store import SessionFile, SessionStore
from scribe.settings.files import find_workspace, read_config, state_dir
from scribe.settings.prices import price_book

from ..exits import cli_errors

if TYPE_CHECKING:
    from scribe.log.index import LogIndex

SESSION_HELP = "Session id or any unique part of it (or a path to a .jsonl log). [default: the latest of this workspace]"


def workspace_store() -> tuple[Path, SessionStore]:
    workspace = find_workspace(Path.cwd())
    return workspace, SessionStore(state_dir(workspace))


# What a command run without a session id wants of the session it picks (log/store.py's `latest`):
# anything that happened after the session began, or a model call to count.
Showing = Literal["events", "calls"]


def resolve_session(ref: str | None, showing: Showing = "events") -> SessionFile:
    """A session by id or any unique part of it, or a log file; without `ref`, the latest of the
    workspace that has what `showing` asks for (else the latest in which anything happened)."""
    workspace, store = workspace_store()
    if ref is None:
        if showing == "calls":
            with open_index() as index:
                return store.latest(workspace, showing=lambda found: _called(index, found))
        return store.latest(workspace, showing=lambda found: not found.empty)
    candidate = Path(ref).expanduser()
    if (ref.endswith(".jsonl") or os.sep in ref) and candidate.is_file():
        first = read_first_record(candidate) or {}
        return SessionFile(candidate.stem, candidate.resolve(), first.get("cwd"), first.get("created"))
    return store.find(ref, workspace)


def open_index() -> LogIndex:
    """The index beside this workspace's logs (log/index.py), costs priced as `log stats` does
    (the workspace's configured prices, then the list prices)."""
    from scribe.context.tokens import BLOCK_OVERHEAD, BLOCK_TOKENS, CHARS_PER_TOKEN, event_tokens
    from scribe.log.index import LogIndex

    _, store = workspace_store()
    prices = workspace_prices()
    # the estimates `log stats` sums: made again whenever the rates they are made with change
    estimates = f"event_tokens {CHARS_PER_TOKEN} {BLOCK_OVERHEAD} {BLOCK_TOKENS}"
    return LogIndex.open(store.root, prices.price_usage, prices.key, event_tokens, estimates)


def _called(index: LogIndex, found: SessionFile) -> bool:
    """Whether the session made a model call, as the index knows once it has read its log."""
    from scribe.log.index import IndexBroken

    try:
        index.refresh_one(found.path)
    except IndexBroken:
        raise
    except LogError:
        return False  # a log that cannot be read has nothing to count
    held = index.session(found.id)
    return held is not None and held.figures.calls > 0


def indexed_scope(index: LogIndex, all_sessions: bool) -> list[SessionFile]:
    """`sessions_in_scope` from the index, each brought up to date with its log; a log that
    cannot be read is noted on stderr and left out."""
    workspace, store = workspace_store()
    found, unread = index.sessions(store, None if all_sessions else workspace)
    for problem in unread:
        print(f"scribe: note: {problem}", file=sys.stderr)
    return found


def sessions_in_scope(all_sessions: bool) -> list[SessionFile]:
    workspace, store = workspace_store()
    return store.sessions(None if all_sessions else workspace)


def load(found: SessionFile, *, notes: bool = True) -> LogRead:
    """Read a session; what the reader skipped is noted on stderr (`verify` says more)."""
    read = read_log(found.path)
    if notes:
        for problem in read.problems:
            print(f"scribe: note: {found.path.name} line {problem.line}: {problem.message}", file=sys.stderr)
    return read


@contextmanager
def streamed(found: SessionFile, *, notes: bool = True) -> Iterator[Iterator[Event]]:
    """`load`, one event at a time (a log of millions of lines is never held): what the reader
    skipped is noted on stderr once the events have been gone through."""
    read = LogRead()
    yield stream_log(found.path, read)
    if notes:
        for problem in read.problems:
            print(f"scribe: note: {found.path.name} line {problem.line}: {problem.message}", file=sys.stderr)


@contextmanager
def log_command() -> Iterator[None]:
    """Known failures as one line on stderr; a closed pipe (`| head`) ends the command quietly."""
    try:
        with cli_errors():
            yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not fail again
        raise typer.Exit(0) from None


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


def console() -> Any:
    """A rich console for people: colour unless NO_COLOR or not a terminal; no markup, no
    highlighting (log text is printed as it is, its control characters shown visibly); wide
    when piped, so tables do not squeeze."""
    from ..visible_console import VisibleConsole

    class LogConsole(VisibleConsole):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # `log_command` ends quietly with 0, as for plain writes

    wide = not sys.stdout.isatty() and not os.environ.get("COLUMNS")
    return LogConsole(highlight=False, markup=False, emoji=False, width=200 if wide else None)


def local_time(ts: str | None, *, date: bool = True, seconds: bool = True) -> str:
    """An ISO timestamp from the log, in local time, to the second (or the minute)."""
    if not ts:
        return "-"
    try:
        m = datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone()
    except ValueError:
        return ts
    # strftime's %Y-%m-%d %H:%M:%S, formatted directly: `log list` shows two a session
    clock = f"{m.hour:02d}:{m.minute:02d}:{m.second:02d}" if seconds else f"{m.hour:02d}:{m.minute:02d}"
    return f"{m.year}-{m.month:02d}-{m.day:02d} {clock}" if date else clock


def money(value: float) -> str:
    return f"${value:,.4f}" if value >= 0.0001 or value == 0 else f"${value:.6f}"


# What a cost is shown as when the model has no price (log/pricing.py); JSON says null.
UNPRICED = "unpriced"


def priced_money(figures: Figures, value: float, show: Any = money) -> str:
    """A dollar figure of `figures` (its cost, its no-cache cost, what caching saved): "unpriced"
    when no call has a price, the priced calls' part and a count of the rest when some do."""
    if figures.calls and figures.unpriced == figures.calls:
        return UNPRICED
    return show(value) + (f" + {figures.unpriced} {UNPRICED}" if figures.unpriced else "")


# What a figure of no model call is shown as: nothing was called, so nothing was priced (JSON says null).
NO_CALLS = "-"


def spent(figures: Figures, value: float) -> str:
    """A dollar figure of the log's views: `priced_money`, and none at all where no call was made."""
    return priced_money(figures, value) if figures.calls else NO_CALLS


def hit_rate(figures: Figures) -> str:
    """The share of the prompt read from the cache, where there was a prompt to read."""
    return percent(figures.hit_rate) if figures.calls else NO_CALLS


def money_or_unpriced(value: float | None) -> str:
    return UNPRICED if value is None else money(value)


def workspace_prices() -> PriceBook:
    """The prices of this workspace: its config's `[prices.MODEL]` tables, then the list prices."""
    return price_book(read_config(find_workspace(Path.cwd())))


def percent(value: float) -> str:
    return f"{value:.1%}"
