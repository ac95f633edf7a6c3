"""`scribe log show`: a session as a readable transcript, as JSON, or as the raw lines on disk."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from scribe.log.events import EVENT_CLASSES, Event, UnknownEvent, to_record

from ..errors import fail
from .common import SESSION_HELP, console, load, log_command, print_json, resolve_session
from .format import EventPrinter


def type_of(event: Event) -> str:
    return event.type_name if isinstance(event, UnknownEvent) else event.type


def check_types(types: list[str], present: set[str]) -> None:
    unknown = [t for t in types if t not in EVENT_CLASSES and t not in present]
    if unknown:
        raise fail(f"no event type '{unknown[0]}' (known: {', '.join(EVENT_CLASSES)})")


def show(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    type_: Annotated[list[str] | None, typer.Option("--type", "-t", help="Only events of this type (repeatable): "
                                                    + ", ".join(EVENT_CLASSES) + ".")] = None,
    since: Annotated[int | None, typer.Option("--since", min=0, help="Only events with seq >= SEQ.")] = None,
    full: Annotated[bool, typer.Option("--full", help="Show tool outputs whole instead of folded.")] = False,
    raw: Annotated[bool, typer.Option("--raw", help="Print the JSONL lines exactly as they are on disk.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the events as one JSON array.")] = False,
) -> None:
    """Show a session: user and assistant text, tool calls and their (folded) results,
    observations, reflections, file changes, interrupts and errors."""
    with log_command():
        if raw and as_json:
            raise fail("give --raw or --json, not both")
        found = resolve_session(session)
        types = set(type_ or [])
        if raw:
            _show_raw(found.path.read_bytes(), types, since)
            return
        read = load(found)
        check_types(sorted(types), {type_of(e) for e in read.events})
        chosen = [e for e in read.events
                  if (not types or type_of(e) in types) and (since is None or e.seq >= since)]
        if as_json:
            print_json([to_record(e) for e in chosen])
            return
        out = console()
        printer = EventPrinter(out, full=full)
        printer.learn(read.events)
        for event in chosen:
            printer(event)


def _show_raw(data: bytes, types: set[str], since: int | None) -> None:
    body, sep, tail = data.rpartition(b"\n")
    if tail:
        print("scribe: note: the last line is torn (no newline); not shown", file=sys.stderr)
    if not sep:
        return
    out = sys.stdout.buffer
    for line in body.split(b"\n"):
        if types or since is not None:
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue
            if not isinstance(record, dict):
                continue
            if types and record.get("type") not in types:
                continue
            seq = record.get("seq")
            if since is not None and not (isinstance(seq, int) and seq >= since):
                continue
        out.write(line + b"\n")
    out.flush()
