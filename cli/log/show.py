"""`scribe log show`: a session as a readable transcript, as JSON, or as the raw lines on disk."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from scribe.log.codec import to_record
from scribe.log.events import EVENT_CLASSES, AssistantEvent, Event, InterruptEvent, UnknownEvent
from scribe.log.store import SessionFile
from scribe.log.whole_lines import WholeLines

from ..exits import fail
from .common import SESSION_HELP, console, log_command, print_json, resolve_session, streamed
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
    compressions: Annotated[bool, typer.Option(
        "--compressions", help="Each compression instead: what its observation or reflection says, beside the "
                               "events it replaced (one line each; whole with --full) and the recall pointers "
                               "that bring them back. With --since SEQ, the compressions made from SEQ on.")] = False,
) -> None:
    """Show a session: user and assistant text, tool calls and their (folded) results,
    observations, reflections, file changes, interrupts and errors."""
    with log_command():
        if raw and as_json:
            raise fail("give --raw or --json, not both")
        if compressions and (raw or type_):
            raise fail("--compressions shows each compression with the events it replaced: not with "
                       f"{'--raw' if raw else '--type'}")
        found = resolve_session(session)
        if compressions:
            _show_compressions(found, since, full, as_json)
            return
        types = set(type_ or [])
        if raw:
            _show_raw(found.path, types, since)
            return
        if any(t not in EVENT_CLASSES for t in types):  # a type this scribe does not know: is it in the log?
            with streamed(found, notes=False) as events:
                check_types(sorted(types), {type_of(e) for e in events})
        with streamed(found) as events:
            if as_json:
                _print_json_array(to_record(e) for e in events if _chosen(e, types, since))
                return
            printer = EventPrinter(console(), full=full)
            # What the interrupts of a filtered view name, learnt from the calls left out (as
            # the printer learns a shown call's names itself); a set of ids, not every call's.
            named = _interrupted(found) if types or since is not None else set()
            for event in events:
                if _chosen(event, types, since):
                    printer(event)
                elif named and isinstance(event, AssistantEvent):
                    printer.learn([event], only=named)


def _show_compressions(found: SessionFile, since: int | None, full: bool, as_json: bool) -> None:
    from .compressions import compressions_json, show_compressions

    with streamed(found) as events:
        if as_json:
            print_json(compressions_json(events, since=since))
            return
        shown = show_compressions(console(), events, since=since, full=full)
    if not shown:
        print(f"scribe: note: no compressions in session {found.id}"
              + (f" from seq {since}" if since is not None else "") + " (its memory is all raw events)",
              file=sys.stderr)


def _chosen(event: Event, types: set[str], since: int | None) -> bool:
    return (not types or type_of(event) in types) and (since is None or event.seq >= since)


def _interrupted(found: SessionFile) -> set[str]:
    """The tool_use ids the log's interrupts name."""
    with streamed(found, notes=False) as events:
        return {i for e in events if isinstance(e, InterruptEvent) for i in e.tool_use_ids}


def _print_json_array(records: Iterable[dict[str, Any]]) -> None:
    """What `print_json` prints of a list, written one element at a time: the same bytes."""
    out = sys.stdout
    first = True
    for record in records:
        out.write(("[\n" if first else ",\n") + textwrap.indent(json.dumps(record, ensure_ascii=False, indent=2),
                                                               "  "))
        first = False
    out.write("[]\n" if first else "\n]\n")
    out.flush()


def _show_raw(path: Path, types: set[str], since: int | None) -> None:
    out = sys.stdout.buffer
    with path.open("rb") as fh:
        lines = WholeLines(fh)
        for _, line in lines:
            if _wanted(line, types, since):
                out.write(line + b"\n")
        if lines.torn:
            print("scribe: note: the last line is torn (no newline); not shown", file=sys.stderr)
    out.flush()


def _wanted(line: bytes, types: set[str], since: int | None) -> bool:
    if not types and since is None:
        return True
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    if not isinstance(record, dict):
        return False
    if types and record.get("type") not in types:
        return False
    seq = record.get("seq")
    return since is None or (isinstance(seq, int) and seq >= since)
