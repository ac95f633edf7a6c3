"""An event as the JSON record of its log line, and a record read back as an event: keys in a
fixed order, a newer format version refused by name, each known field checked against its
annotation (cheaply: a reader meets every line of a log on the reopen path), unknown fields and
types kept so that an older reader never destroys what a newer writer recorded."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from .events import EVENT_CLASSES, LOG_FORMAT_VERSION, Event, UnknownEvent

_BASE_KEYS = ("v", "seq", "ts", "type")


class EventFormatError(ValueError):
    """A line is JSON but not an event this reader can understand."""


class NewerFormatError(EventFormatError):
    """A line written by a newer scribe, in a format version this one does not know."""


def _field_names(cls: type[Event]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} - {"seq", "ts", "extra"}


_FIELDS = {name: _field_names(cls) for name, cls in EVENT_CLASSES.items()}

# What a field's annotation allows, as a cheap check of the parsed JSON value: a reader meets
# every line of a log on the reopen path, so this is a set lookup of the value's exact type per
# field (bool is not an int here, as in JSON Schema), not a schema validator (`scribe log
# verify` runs the whole JSON Schema). A line that fails is treated like a corrupt one:
# reported, skipped, left in the file.
_WORDS = {int: "an integer", str: "a string", bool: "true or false", list: "a list", dict: "an object",
          type(None): "null"}
_PLURALS = {int: "integers", str: "strings", bool: "booleans", list: "lists", dict: "objects"}


@dataclass(frozen=True)
class FieldCheck:
    name: str
    types: frozenset[type]  # the exact JSON-decoded types the value may have
    items: frozenset[type] | None = None  # of a list's items or an object's values, when fixed

    def holds(self, value: Any) -> bool:
        kind = type(value)
        if kind not in self.types:
            return False
        if self.items is None or value is None:
            return True
        values = value.values() if kind is dict else value
        return all(type(v) in self.items for v in values)

    @property
    def expected(self) -> str:
        words = " or ".join(_WORDS.get(t, t.__name__) for t in sorted(self.types, key=lambda t: t is type(None)))
        if self.items:
            words += " of " + " or ".join(_PLURALS.get(t, t.__name__) for t in self.items)
        return words


def _types_of(annotation: Any) -> tuple[frozenset[type], frozenset[type] | None]:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        parts = [_types_of(a) for a in args]
        items = {i for _, i in parts if i is not None}
        return frozenset().union(*(t for t, _ in parts)), (frozenset().union(*items) if items else None)
    if annotation is Any:
        return frozenset(_WORDS), None
    if origin in (list, dict):
        inner = args[-1] if args else Any
        return frozenset({origin}), None if inner is Any else frozenset({get_origin(inner) or inner})
    return frozenset({annotation}), None


def _field_checks(cls: type[Event]) -> tuple[FieldCheck, ...]:
    hints = get_type_hints(cls)
    return tuple(FieldCheck(name, *_types_of(hints[name])) for name in sorted(_field_names(cls)))


def _block_problem(block: Any) -> str | None:
    """What the renderer and `scribe log` need of a content block (the schema's `block`)."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return "a content block is not an object with a string type"
    if block["type"] == "text" and not isinstance(block.get("text"), str):
        return "a text block has no string text"
    if block["type"] == "tool_use" and not (isinstance(block.get("id"), str) and block["id"]
                                            and isinstance(block.get("name"), str)
                                            and isinstance(block.get("input"), dict)):
        return "a tool_use block lacks a string id and name or an object input"
    return None


_CHECKS = {name: _field_checks(cls) for name, cls in EVENT_CLASSES.items()}


def schema_problem(type_name: str, fields: dict[str, Any]) -> str | None:
    """Why the known fields of a line of a known type break the event schema, or None."""
    for check in _CHECKS[type_name]:
        if check.name in fields and not check.holds(fields[check.name]):
            return f"{check.name} is not {check.expected}"
    if type_name == "assistant":
        for block in fields.get("content") or ():
            if (problem := _block_problem(block)) is not None:
                return problem
    return None


def to_record(event: Event) -> dict[str, Any]:
    """The JSON object for one log line, keys in a fixed order."""
    if isinstance(event, UnknownEvent):
        return {"v": LOG_FORMAT_VERSION, "seq": event.seq, "ts": event.ts, "type": event.type_name,
                **event.extra}
    record: dict[str, Any] = {"v": LOG_FORMAT_VERSION, "seq": event.seq, "ts": event.ts, "type": event.type}
    for f in dataclasses.fields(event):
        if f.name not in ("seq", "ts", "extra"):
            value = getattr(event, f.name)
            if not value and f.metadata.get("omit_empty"):
                continue
            record[f.name] = value
    record.update(event.extra)
    return record


def from_record(record: dict[str, Any]) -> Event:
    """Build an event from a parsed log line. Raises EventFormatError on a malformed one."""
    if not isinstance(record, dict):
        raise EventFormatError("line is not a JSON object")
    version = record.get("v")
    if isinstance(version, int) and version > LOG_FORMAT_VERSION:
        raise NewerFormatError(f"log format v{version} is newer than this scribe understands (v{LOG_FORMAT_VERSION})")
    seq, ts, type_name = record.get("seq"), record.get("ts"), record.get("type")
    if type(seq) is not int or not isinstance(ts, str) or not isinstance(type_name, str):
        raise EventFormatError("line lacks an integer seq, a ts or a type")
    cls = EVENT_CLASSES.get(type_name)
    rest = {k: v for k, v in record.items() if k not in _BASE_KEYS}
    if cls is None:
        return UnknownEvent(seq=seq, ts=ts, type_name=type_name, extra=rest)
    known = _FIELDS[type_name]
    kwargs = {k: v for k, v in rest.items() if k in known}
    extra = {k: v for k, v in rest.items() if k not in known}
    problem = schema_problem(type_name, kwargs)
    if problem is not None:
        raise EventFormatError(f"{type_name} event: {problem}")
    try:
        return cls(seq=seq, ts=ts, extra=extra, **kwargs)
    except TypeError as exc:
        raise EventFormatError(f"{type_name} event: {exc}") from None
