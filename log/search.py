"""Searching a log: a regular expression over the text each event carries, line by line. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from scribe.log.codec import to_record
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    InterruptEvent,
    NotesEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UnknownEvent,
    UserEvent,
)

LINE_CHARS = 200


class Found(Protocol):
    def start(self) -> int: ...

    def end(self) -> int: ...


class Pattern(Protocol):
    """What `search` matches with: a compiled `re` pattern, or one whose work is bounded
    (tools/pattern.py), which raises when its budget runs out."""

    def search(self, text: str) -> Found | None: ...


@dataclass(frozen=True)
class Hit:
    seq: int
    type: str
    field: str  # where the line is: text, output, tool_use write_file.content, ...
    line: str  # the matching line, trimmed to about LINE_CHARS around the match
    start: int  # the match's span within `line`
    end: int

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "field": self.field, "line": self.line}


def texts(event: Event, session: str = "") -> Iterator[tuple[str, str]]:
    """(field, text) pairs a person would want to search in this event of `session` (its id)."""
    if isinstance(event, UserEvent):
        yield "text", event.text
    elif isinstance(event, AssistantEvent):
        for block in event.content:
            if block.get("type") == "text":
                yield "text", str(block.get("text", ""))
            elif block.get("type") == "tool_use":
                name = str(block.get("name", "?"))
                yield "tool_use", name
                for key, value in _strings(block.get("input")):
                    yield f"tool_use {name}.{key}" if key else f"tool_use {name}", value
            elif block.get("type") == "thinking":
                yield "thinking", str(block.get("thinking", ""))
    elif isinstance(event, ToolResultEvent):
        yield "output", event.output
    elif isinstance(event, (ObservationEvent, ReflectionEvent)):
        yield "text", event.text
    elif isinstance(event, FileChangeEvent):
        yield "path", event.path + (f" -> {event.dest}" if event.dest else "")
    elif isinstance(event, InterruptEvent):
        yield "reason", event.reason
    elif isinstance(event, ErrorEvent):
        yield "message", event.message
        if isinstance(event.extra.get("torn"), str):
            yield "torn", event.extra["torn"]
    elif isinstance(event, SessionEvent):
        return  # instructions and tool definitions: the same in every session, not worth matching
    elif isinstance(event, NotesEvent):
        yield "text", own_notes(event, session)
    elif isinstance(event, UnknownEvent):
        yield from _strings(event.extra)
    else:  # a type with no search fields of its own (git_commit, ...): every string it holds
        yield from _strings({k: v for k, v in to_record(event).items() if k not in ("v", "ts", "type")})


def own_notes(event: NotesEvent, session: str) -> str:
    """The lines of the notes as curated from `session` that came from it (`[from ID#SEQ]`):
    the rest of the file is a copy every curation writes again, and matching it would repeat each
    fact once per session curated after it. All lines when the session is not known."""
    if not session:
        return event.text
    return "\n".join(line for line in event.text.splitlines() if f"[from {session}#" in line)


def _strings(value: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)


# A text longer than this (a tool's whole output) is matched line by line only: a bounded pattern
# matches a text in its first megabyte only (tools/pattern.py), and the lines after must be seen.
WHOLE_TEXT_CHARS = 1 << 20


def search(events: Iterable[Event], pattern: Pattern, session: str = "") -> Iterator[Hit]:
    """Every line of the events' texts that `pattern` matches; `session`: the log's id."""
    for event in events:
        type_name = event.type_name if isinstance(event, UnknownEvent) else event.type
        for where, text in texts(event, session):
            whole = len(text) <= WHOLE_TEXT_CHARS
            if whole and not pattern.search(text):
                continue
            found = False
            for line in text.splitlines():
                match = pattern.search(line)
                if match:
                    found = True
                    yield _hit(event.seq, type_name, where, line, match)
            if not found and whole:  # the match spans lines: show the line it starts on
                match = pattern.search(text)
                assert match is not None
                begin = text.rfind("\n", 0, match.start()) + 1
                stop = text.find("\n", match.start())
                line = text[begin:] if stop < 0 else text[begin:stop]
                yield _hit(event.seq, type_name, where, line, match, shift=begin)


def _hit(seq: int, type_name: str, where: str, line: str, match: Found, shift: int = 0) -> Hit:
    start, end = match.start() - shift, min(match.end() - shift, len(line))
    shown, offset = trim(line, start, end)
    return Hit(seq, type_name, where, shown, start - offset, min(end - offset, len(shown)))


def trim(line: str, start: int, end: int, width: int = LINE_CHARS) -> tuple[str, int]:
    """About `width` characters of `line` around [start, end); the offset of what is kept."""
    line = line.rstrip()
    if len(line) <= width:
        return line, 0
    begin = max(0, min(start - width // 4, len(line) - width))
    shown = line[begin:begin + width]
    prefix = "…" if begin else ""
    suffix = "…" if begin + width < len(line) else ""
    return prefix + shown + suffix, begin - len(prefix)
