"""Side-call answers as forced tool calls: the one tool each kind of side call is asked to answer
through, and that tool's input written as the text its reader already knows.

Where a server offers tools, a side call names one tool and forces it (`tool_choice` of type
`tool`); a server with grammar-constrained decoding must then produce input that fits the
schema, however weak the model. The input is turned into the canonical text of its kind and
passed through the same reader as a text answer (memory/observations.py, memory/notes_reader.py),
so what enters the log, and every render, is byte for byte what a text answer saying the same
would give. A server that ignores tools answers text, and the text reader takes it as before.
"""

from __future__ import annotations

from typing import Any

from .answer import UnusableAnswer
from .observations import NEXT_LABEL, TAGS, TASK_LABEL

OBSERVATIONS_TOOL_NAME = "record_observations"
NOTES_TOOL_NAME = "record_notes"

# Priority names a schema can constrain, each with its tag; a tag itself is accepted too.
PRIORITIES = {"must_keep": "🔴", "useful": "🟡", "background": "🟢", "done": "✅"}

OBSERVATIONS_TOOL: dict[str, Any] = {
    "name": OBSERVATIONS_TOOL_NAME,
    "description": ("Record the observations, one item per observation, with its priority (must_keep 🔴, "
                    "useful 🟡, background 🟢, done ✅), then the current task and the next step."),
    "input_schema": {
        "type": "object",
        "properties": {
            "observations": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "priority": {"type": "string", "enum": list(PRIORITIES)},
                        "text": {"type": "string", "minLength": 1},
                    },
                    "required": ["priority", "text"],
                },
            },
            "current_task": {"type": "string"},
            "next_step": {"type": "string"},
        },
        "required": ["observations", "current_task", "next_step"],
    },
}

NOTES_TOOL: dict[str, Any] = {
    "name": NOTES_TOOL_NAME,
    "description": ("Record the complete new project notes: one item per entry, with the source it comes from "
                    "(SESSION#SEQ; leave it out only for a line the person wrote) and an optional heading."),
    "input_schema": {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "minLength": 1},
                        "source": {"type": "string"},
                        "heading": {"type": "string"},
                    },
                    "required": ["text"],
                },
            },
        },
        "required": ["entries"],
    },
}


def observations_text(tool_input: object) -> str:
    """The input of a `record_observations` call as observation lines in the canonical form,
    or UnusableAnswer naming what is wrong with it."""
    if not isinstance(tool_input, dict):
        raise UnusableAnswer(f"the {OBSERVATIONS_TOOL_NAME} input is not an object")
    items = tool_input.get("observations")
    if not isinstance(items, list):
        raise UnusableAnswer(f"the {OBSERVATIONS_TOOL_NAME} input has no list of observations")
    lines: list[str] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise UnusableAnswer(f"observation {n} of the {OBSERVATIONS_TOOL_NAME} input has no text")
        tag = _tag(item.get("priority"))
        if tag is None:
            raise UnusableAnswer(f"observation {n} of the {OBSERVATIONS_TOOL_NAME} input has an unknown priority "
                                 f"{item.get('priority')!r}")
        text = _one_line(item["text"])
        if text:
            lines.append(f"{tag} {text}")
    for label, key in ((TASK_LABEL, "current_task"), (NEXT_LABEL, "next_step")):
        value = tool_input.get(key)
        if isinstance(value, str) and _one_line(value):
            lines.append(f"{label}: {_one_line(value)}")
    return "\n".join(lines)


def notes_from_tool(tool_input: object) -> str:
    """The input of a `record_notes` call as notes bullets (`- text [from SOURCE]` under `## `
    headings), or UnusableAnswer."""
    if not isinstance(tool_input, dict) or not isinstance(tool_input.get("entries"), list):
        raise UnusableAnswer(f"the {NOTES_TOOL_NAME} input has no list of entries")
    lines: list[str] = []
    heading: str | None = None
    for n, item in enumerate(tool_input["entries"]):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise UnusableAnswer(f"entry {n} of the {NOTES_TOOL_NAME} input has no text")
        wanted = item.get("heading")
        if isinstance(wanted, str) and _one_line(wanted) and _one_line(wanted) != heading:
            heading = _one_line(wanted)
            lines += ([""] if lines else []) + [f"## {heading}"]
        source = item.get("source")
        suffix = f" [from {_one_line(source)}]" if isinstance(source, str) and _one_line(source) else ""
        lines.append(f"- {_one_line(item['text'])}{suffix}")
    return "\n".join(lines)


def _tag(priority: object) -> str | None:
    if not isinstance(priority, str):
        return None
    word = priority.strip().removesuffix("\ufe0f")
    if word in TAGS:
        return word
    return PRIORITIES.get(word.lower().replace(" ", "_").replace("-", "_"))


def _one_line(text: str) -> str:
    """A schema cannot forbid a newline inside a string; one line per item is the canonical form."""
    return " ".join(text.split())
