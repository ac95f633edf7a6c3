"""`scribe log tail`: the last events of a session, and with -f the ones another process is
appending, as they land (complete lines only; Ctrl-C stops it)."""

from __future__ import annotations

import json
import signal
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from scribe.log.events import Event, EventFormatError, from_record
from scribe.log.follow import complete_end, follow

from .common import SESSION_HELP, console, log_command, resolve_session
from .format import EventPrinter


def tail(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="How many of the last events to print.")] = 10,
    follow_: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing events as they are appended "
                                          "(Ctrl-C stops).")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="Print the JSONL lines as they are on disk.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Show tool outputs whole instead of folded.")] = False,
    poll: Annotated[float, typer.Option("--poll", min=0.01, help="Seconds between checks of the file when "
                                        "following.")] = 0.2,
) -> None:
    """Print the last events of a session; with -f, follow it while another scribe writes it."""
    with log_command():
        found = resolve_session(session)
        data = found.path.read_bytes()
        end = complete_end(data)
        complete = data[:end].split(b"\n")[:-1] if end else []
        printer = EventPrinter(console(), full=full) if not raw else None
        show = _shower(printer)
        if printer is not None:
            printer.learn([e for e in map(_event, complete) if e is not None])
        for line in complete[-lines:] if lines else []:
            show(line)
        _flush()
        if not follow_:
            return
        # Stopping is the normal way out of -f: Ctrl-C (even when started with SIGINT ignored)
        # and SIGTERM both end it cleanly, with exit 0.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            for batch in follow(found.path, end, poll_s=poll):
                for line in batch:
                    show(line)
                _flush()
        except KeyboardInterrupt:
            _flush()
            raise typer.Exit(0) from None


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
