"""`scribe log html`: a session as one self-contained HTML page (no network, works from file://)."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from scribe.log.attachments import ImageStore
from scribe.log.events import Event, UserEvent
from scribe.workspace.writers.atomic import WriteRefused, write_atomic

from ..exits import fail
from .common import SESSION_HELP, log_command, resolve_session, streamed, workspace_prices

# Private to the person, as the session logs are (log/private.py): a page holds the whole transcript.
PAGE_MODE = 0o600


def html_page(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    output: Annotated[str | None, typer.Option(
        "--output", "-o", metavar="FILE",
        help="Where to write the page: a file, a folder (the page is SESSION-ID.html in it), or - for "
             "standard output. [default: SESSION-ID.html in the current folder]", show_default=False)] = None,
) -> None:
    """Write a session as one HTML file that opens in any current browser, offline.

    The page shows the session's figures (as `scribe log stats`), one bar per model call in
    tokens and dollars with the running cost and each call's cache hit rate, where the memory was
    compressed, and the timeline of turns: messages, answers, tool calls and their outputs, file
    changes, interrupts, errors. Choosing a call shows the prompt it was sent (as `scribe log
    prompt --at` rebuilds it), the part served from the cache, and what broke the cache.
    Everything is inline: nothing is fetched, no script from the log runs. The file is written
    readable by you only (0600), as the logs are: it holds the whole transcript.
    """
    from .page import session_page  # here: markdown-it and the page's modules cost `scribe --help` nothing

    with log_command():
        found = resolve_session(session)
        with streamed(found) as events:
            recent, left_out = _recent(events)
        page = session_page(found.id, recent, left_out=left_out, prices=workspace_prices(),
                            images=ImageStore.for_log(found.path))
        if output == "-":
            sys.stdout.write(page)
            sys.stdout.flush()
            return
        target = Path(output).expanduser() if output else Path(f"{found.id}.html")
        if target.is_dir():
            target = target / f"{found.id}.html"
        written = page.encode("utf-8")
        try:  # whole or not at all: a page half written would open as a broken one
            # 0600, as the log: the page holds the whole transcript (an existing page's mode is not kept)
            write_atomic(target, written, str(target), mode=PAGE_MODE)
        except WriteRefused as exc:
            raise fail(str(exc)) from None
        print(f"wrote {target} ({len(written) / 1024:,.0f} KB, readable by you only): "
              f"open {target.resolve().as_uri()} in a browser")


# The events a page holds at most: past that, a page takes minutes to build and a browser minutes
# to open, so a long session's page is its session event and the turns that end it.
PAGE_EVENTS = 5_000


def _recent(events: Iterator[Event]) -> tuple[list[Event], int]:
    """The log's first event and, of the rest, the last PAGE_EVENTS from a turn's start; how
    many were passed over. Only those are ever held."""
    first = next(events, None)
    if first is None:
        return [], 0
    tail: deque[Event] = deque(maxlen=PAGE_EVENTS)
    seen = 0
    for event in events:
        tail.append(event)
        seen += 1
    if seen > PAGE_EVENTS:
        while tail and not isinstance(tail[0], UserEvent):
            tail.popleft()  # begin at a turn: a page opening mid-turn shows answers to nothing
    return [first, *tail], seen - len(tail)
