"""The event schema, checked quickly over many lines, with `jsonschema` as the only authority.

jsonschema spends about 10 µs per property it checks, so a 10,000-line log would take seconds.
But the schema (memory/schema.json) only looks at a value's JSON type, at numbers against a few
`minimum`s, at string lengths against a few `minLength`s and at strings equal to a few `const`s.
Two lines that agree on all of that (their *shape*) are valid or invalid together, so each shape
is validated once by jsonschema and remembered. A schema using any other keyword turns the
shortcut off rather than risk a wrong answer.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from scribe.log.events import EVENT_CLASSES

# Keywords whose verdict depends only on what `shape` keeps (format is an annotation here:
# no format checker is enabled).
SHAPE_SAFE = frozenset({
    "$schema", "$id", "$defs", "$ref", "$comment", "title", "description", "examples", "default", "format",
    "type", "properties", "required", "additionalProperties", "items", "allOf", "if", "then", "else",
    "minimum", "minLength", "const", "enum",
})
CACHE_LIMIT = 50_000


@cache
def event_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one log line, as shipped in the package."""
    text = resources.files("scribe.log").joinpath("schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@dataclass(frozen=True)
class Thresholds:
    minimums: tuple[float, ...]
    min_lengths: tuple[int, ...]
    consts: frozenset[str]


def thresholds(schema: Any) -> Thresholds | None:
    """What `shape` must keep for this schema, or None if it uses a keyword shapes can't answer."""
    minimums: set[float] = set()
    lengths: set[int] = set()
    consts: set[str] = set()

    def walk(node: Any, keyword_position: bool) -> bool:
        if isinstance(node, list):
            return all(walk(item, True) for item in node)
        if not isinstance(node, dict):
            return True
        for key, value in node.items():
            if keyword_position and key not in SHAPE_SAFE:
                return False
            if key == "minimum":
                minimums.add(value)
            elif key == "minLength":
                lengths.add(value)
            elif key == "const":
                if not isinstance(value, str):
                    return False
                consts.add(value)
            elif key == "enum":  # of strings: as many consts, each a value the shape must tell apart
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    return False
                consts.update(value)
                continue
            # under these, keys are names (of properties or definitions), not keywords
            names = key in ("properties", "$defs")
            if key not in ("examples", "default", "const", "description", "title") and not walk(
                    value if not names else list(value.values()), True):
                return False
        return True

    if not walk(schema, True):
        return None
    return Thresholds(tuple(sorted(minimums)), tuple(sorted(lengths)), frozenset(consts))


def shape(value: Any, t: Thresholds) -> Hashable:
    """What the schema can see of a value: JSON types, keys, and the thresholds it meets."""
    if isinstance(value, dict):
        return ("o", tuple((k, shape(v, t)) for k, v in value.items()))
    if isinstance(value, list):
        return ("a", tuple(shape(v, t) for v in value))
    if isinstance(value, str):
        return ("s", value if value in t.consts else None, tuple(len(value) >= n for n in t.min_lengths))
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int):
        return ("i", tuple(value >= m for m in t.minimums))
    if isinstance(value, float):
        return ("f", value.is_integer(), tuple(value >= m for m in t.minimums))
    return ("?", repr(value))


class EventChecker:
    """Per-type validators (the common fields plus those of the line's type, chosen by `type`
    rather than a oneOf over every type), and the remembered verdicts of shapes seen."""

    def __init__(self, schema: dict[str, Any]) -> None:
        from jsonschema import Draft202012Validator  # imported here: only verify pays for it

        Draft202012Validator.check_schema(schema)
        defs = schema["$defs"]

        def for_type(name: str | None) -> Any:
            parts = [{"$ref": "#/$defs/event"}] + ([{"$ref": f"#/$defs/{name}"}] if name else [])
            return Draft202012Validator({"$schema": schema["$schema"], "$defs": defs, "allOf": parts})

        # a type events.py knows but the schema does not describe gets the common fields only
        # (tests/log/test_verify.py fails until the schema catches up)
        self.validators = {name: for_type(name) for name in EVENT_CLASSES if name in defs}
        self.fallback = for_type(None)  # a type this version does not know: common fields only
        self.thresholds = thresholds(schema)
        self.valid_shapes: set[Hashable] = set()

    def problems(self, record: dict[str, Any]) -> list[str]:
        """Why one parsed line does not fit the schema (empty when it does)."""
        type_name = record.get("type")
        validator = self.validators.get(type_name, self.fallback) if isinstance(type_name, str) else self.fallback
        key = None
        if self.thresholds is not None:
            key = (type_name if isinstance(type_name, str) else None, shape(record, self.thresholds))
            if key in self.valid_shapes:
                return []
        errors = sorted(validator.iter_errors(record), key=lambda e: [str(p) for p in e.absolute_path])
        if not errors and key is not None:
            if len(self.valid_shapes) >= CACHE_LIMIT:
                self.valid_shapes.clear()
            self.valid_shapes.add(key)
        out = []
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path)
            out.append(f"{where}: {error.message}" if where else error.message)
        return out


@cache
def event_checker() -> EventChecker:
    """Built once per process: loading the schema and building validators is the slow part."""
    return EventChecker(event_schema())
