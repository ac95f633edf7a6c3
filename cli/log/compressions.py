"""`scribe log show --compressions`: each compression of a session, what its chunk says beside
the events it replaced (one line each, or whole with --full), and the `recall` pointers that
bring those events back exactly. A compression loses nothing from the log; this is where a
person sees what it dropped from the prompt."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from scribe.context.compressions import Folded, Stretch, compressions
from scribe.log.codec import to_record
from scribe.log.events import Event, ObservationEvent, UnknownEvent
from scribe.tools.textio import plural

from ..visible import visible
from .format import INDENT, STYLE, EventPrinter, lines_of


def recall_pointer(seq_from: int, seq_to: int) -> str:
    """The `recall` call that reads these events back whole (the tool's own argument names)."""
    return f"recall seq_from={seq_from} seq_to={seq_to}"


def heading(folded: Folded) -> str:
    """What a compression did, in one line: the same words in the terminal and on the page."""
    chunk = folded.chunk
    made = "model-free" if folded.model_free else chunk.model
    sizes = f"~{folded.tokens_before:,} → {folded.tokens_after:,} tokens"
    if isinstance(chunk, ObservationEvent):
        return (f"observation of events {chunk.seq_from}-{chunk.seq_to} · "
                f"{plural(len(folded.replaced), 'event')} folded, {sizes} · {made}")
    covers = f" · covers events {folded.covers[0]}-{folded.covers[1]}" if folded.covers else ""
    return f"reflection of {plural(len(folded.replaced), 'chunk')} · {sizes}{covers} · {made}"


def stretch_heading(folded: Folded, stretch: Stretch) -> str:
    """Where one run of replaced events begins, and the pointer that brings it back."""
    if folded.kind == "reflection":
        chunk = stretch.events[0]
        span = folded_span(chunk)
        return f"chunk {chunk.seq}" + (f" · {recall_pointer(*span)}" if span else "")
    return f"events {stretch.seq_from}-{stretch.seq_to} · {recall_pointer(stretch.seq_from, stretch.seq_to)}"


def folded_span(chunk: Event) -> tuple[int, int] | None:
    return (chunk.seq_from, chunk.seq_to) if isinstance(chunk, ObservationEvent) else None


def show_compressions(out: Any, events: Iterable[Event], *, since: int | None, full: bool) -> int:
    """Print every compression (from seq `since`), each as its heading, its lines, and what it
    replaced; how many were printed."""
    from rich.text import Text

    printer = EventPrinter(out, full=full)
    shown = 0
    for folded in compressions(taught(printer, events)):
        if since is not None and folded.chunk.seq < since:
            continue
        shown += 1
        line = Text(f"[{folded.chunk.seq}] ", style="dim")
        line.append(visible(heading(folded)), style=STYLE["observation"])
        out.print(line, soft_wrap=True)
        out.print(Text(f"{INDENT}what it says:", style="bold"), soft_wrap=True)
        for text in lines_of(folded.chunk.text):
            out.print(Text(f"{INDENT}{INDENT}{text}"), soft_wrap=True)
        where = f" ({recall_pointer(*folded.covers)} reads them back whole)" if folded.covers else ""
        out.print(Text(f"{INDENT}what it replaced{where}:", style="bold"), soft_wrap=True)
        if not folded.replaced:
            out.print(Text(f"{INDENT}{INDENT}(none of its events are in this log)", style="dim"), soft_wrap=True)
        for stretch in folded.stretches():
            out.print(Text(f"{INDENT}{INDENT}{visible(stretch_heading(folded, stretch))}", style="dim"), soft_wrap=True)
            for event in stretch.events:
                if full:
                    _whole(out, printer, event)
                else:
                    out.print(Text(f"{INDENT}{INDENT}{INDENT}[{event.seq}] {visible(printer.gist(event))}"),
                              soft_wrap=True)
    return shown


def _whole(out: Any, printer: EventPrinter, event: Event) -> None:
    from rich.text import Text

    header, style, body = printer.describe(event)
    line = Text(f"{INDENT * 3}[{event.seq}] ", style="dim")
    line.append(visible(header), style=STYLE.get(style, ""))
    out.print(line, soft_wrap=True)
    for text, body_style in body:
        out.print(Text(INDENT * 4 + visible(text), style=STYLE.get(body_style, "")), soft_wrap=True)


def _type(event: Event) -> str:
    return event.type_name if isinstance(event, UnknownEvent) else event.type


def taught(printer: EventPrinter, events: Iterable[Event]) -> Iterator[Event]:
    """The events, each shown to the printer first: an interrupt names the tools of calls that
    may lie outside every span."""
    for event in events:
        printer.learn([event])
        yield event


def compressions_json(events: Iterable[Event], *, since: int | None) -> list[dict[str, Any]]:
    """Every compression (from seq `since`) as JSON: the chunk's event whole, its figures, and
    what it replaced stretch by stretch with the recall pointer of each."""
    printer = EventPrinter(None)
    out = []
    for folded in compressions(taught(printer, events)):
        if since is not None and folded.chunk.seq < since:
            continue
        stretches = []
        for stretch in folded.stretches():
            span = folded_span(stretch.events[0]) if folded.kind == "reflection" else (stretch.seq_from,
                                                                                          stretch.seq_to)
            stretches.append({"recall": {"seq_from": span[0], "seq_to": span[1]} if span else None,
                              "events": [{"seq": e.seq, "type": _type(e), "gist": printer.gist(e)}
                                         for e in stretch.events]})
        out.append({"seq": folded.chunk.seq, "kind": folded.kind, "model_free": folded.model_free,
                    "tokens_before": folded.tokens_before, "tokens_after": folded.tokens_after,
                    "replaced": len(folded.replaced),
                    "recall": {"seq_from": folded.covers[0], "seq_to": folded.covers[1]} if folded.covers else None,
                    "chunk": to_record(folded.chunk), "stretches": stretches})
    return out
