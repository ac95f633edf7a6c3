"""`scribe log tail`: the last events of a session, and with -f the ones another process is
appending, as they land (complete lines only; Ctrl-C stops it)."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import Annotated, Any

import typer

from scribe.log.codec import EventFormatError, from_record
from scribe.log.events import AssistantEvent, Event, InterruptEvent
from scribe.log.follow import NewSessions, Switched, follow, follow_workspace
from scribe.log.jsonl import LogError
from scribe.log.store import SessionFile, SessionNotFound, SessionStore
from scribe.log.whole_lines import complete_end_of, lines_before

from .common import SESSION_HELP, console, log_command, resolve_session, workspace_store
from .format import EventPrinter


def tail(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="How many of the last events to print.")] = 10,
    follow_: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing events as they are appended "
                                          "(Ctrl-C stops); without a session id, the session a scribe is "
                                          "writing now (else the latest), then each one started later in "
                                          "this workspace.")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="Print the JSONL lines as they are on disk.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Show tool outputs whole instead of folded.")] = False,
    poll: Annotated[float, typer.Option("--poll", min=0.01, help="Seconds between checks of the file when "
                                        "following.")] = 0.2,
) -> None:
    """Print the last events of a session; with -f, follow it while another scribe writes it.
    Without a session id, -f follows the session a scribe is writing now (else the latest), says
    which on stderr, and moves on to each session started later in this workspace."""
    with log_command():
        workspace, store = workspace_store()
        # what counts as started later is fixed before the session to follow is chosen
        arrivals = NewSessions(store, workspace) if follow_ and session is None else None
        found = _to_follow(workspace, store) if arrivals is not None else resolve_session(session)
        end, window = _last_lines(found.path, lines) if found is not None else (0, [])
        printer = EventPrinter(console(), full=full) if not raw else None
        show = _shower(printer)
        if printer is not None and found is not None:
            _learn(printer, found.path, end, window)
        for line in window:
            show(line)
        _flush()
        if not follow_:
            return
        # Stopping is the normal way out of -f: Ctrl-C (even when started with SIGINT ignored)
        # and SIGTERM both end it cleanly, with exit 0.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            if arrivals is None:
                assert found is not None
                batches: Iterator[list[bytes] | Switched] = follow(found.path, end, poll_s=poll)
            else:
                batches = follow_workspace(arrivals, found, end, poll_s=poll)
            for batch in batches:
                if isinstance(batch, Switched):
                    _flush()
                    print(f"scribe: session {batch.found.id} started in this workspace; following it now",
                          file=sys.stderr, flush=True)
                    show = _shower(EventPrinter(console(), full=full) if not raw else None)
                    continue
                for line in batch:
                    show(line)
                _flush()
        except KeyboardInterrupt:
            _flush()
            raise typer.Exit(0) from None


def _to_follow(workspace: Path, store: SessionStore) -> SessionFile | None:
    """The session `tail -f` follows when none is named, said on stderr: the one a scribe is
    writing now (the holder of its lock), else the latest; None while there is none yet."""
    live = store.being_written(workspace)
    if live is not None:
        found, pid = live
        said = f"following session {found.id}, which process {pid} is writing"
    else:
        try:
            found = store.latest(workspace, showing=lambda s: not s.empty)
        except SessionNotFound:
            print("scribe: no session in this workspace yet; waiting for one to start", file=sys.stderr, flush=True)
            return None
        said = f"following session {found.id}, the latest (no scribe is writing one in this workspace now)"
    print(f"scribe: {said}; a session started here later is followed in its turn", file=sys.stderr, flush=True)
    return found


def _last_lines(path: Path, count: int) -> tuple[int, list[bytes]]:
    """Where the log's whole lines end, and the last `count` of them (blank ones count), read
    from the end of the file: a gigabyte of log is not read to show ten lines."""
    try:
        with path.open("rb") as fh:
            end = complete_end_of(fh)
            return end, list(reversed(list(islice(lines_before(fh, end), count))))
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None


def _learn(printer: EventPrinter, path: Path, end: int, window: list[bytes]) -> None:
    """Teach the printer the tool names the window's interrupts name, as if it had learnt them
    from the whole log: from the window, then from the lines before it, read backwards until
    each is found (the last call with that id wins, as in the log read forwards)."""
    shown = [e for e in map(_event, window) if e is not None]
    printer.learn(shown)
    wanted = {i for e in shown if isinstance(e, InterruptEvent) for i in e.tool_use_ids} - printer.tools.keys()
    if not wanted:
        return
    with path.open("rb") as fh:
        for line in islice(lines_before(fh, end), len(window), None):
            event = _event(line) if b'"assistant"' in line else None
            if isinstance(event, AssistantEvent):
                for block in event.content:
                    if block.get("type") == "tool_use" and str(block.get("id")) in wanted:
                        printer.tools[str(block.get("id"))] = str(block.get("name", "?"))
                        wanted.discard(str(block.get("id")))
                if not wanted:
                    return


def _shower(printer: EventPrinter | None) -> Callable[[bytes], None]:
    def show(line: bytes) -> None:
        if not line.strip():
            return
        if printer is None:
            sys.stdout.buffer.write(line + b"\n")
            return
        event = _event(line)
        if event is None:
            print(f"scribe: note: a line that is not an event ({len(line)} bytes); `scribe log verify` says why",
                  file=sys.stderr)
        else:
            printer(event)

    return show


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _event(line: bytes) -> Event | None:
    try:
        record: Any = json.loads(line)
        return from_record(record)
    except (json.JSONDecodeError, UnicodeDecodeError, EventFormatError):
        return None


def _flush() -> None:
    sys.stdout.flush()
    sys.stdout.buffer.flush()
