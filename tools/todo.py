"""todo: the model's short plan for the work in hand, a list it rewrites whole on every call.

As Claude Code's TodoWrite does, each call sends the whole list: items with a text and a status
(pending, in_progress, done). Nothing is kept in the tool: the list in force is the input of the
last todo call whose result was not an error, read from the log (`current_todos`), so the REPL,
`scribe log show` and the session page all show the same list, and a continued session has it
back without any state of its own. The result the model gets back is the list as accepted, one
line per item, which is also what the log keeps as the call's output.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from scribe.log.events import AssistantEvent, Event, ToolResultEvent
from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput

NAME = "todo"
Status = Literal["pending", "in_progress", "done"]
STATUSES: tuple[Status, ...] = ("pending", "in_progress", "done")
# Spellings models bring from other agents' task tools, read as ours.
_SYNONYMS: dict[str, Status] = {"completed": "done", "complete": "done", "in progress": "in_progress",
                                "in-progress": "in_progress", "todo": "pending"}
MAX_ITEMS = 50
MAX_TEXT = 500
MARKS: dict[Status, str] = {"pending": "[ ]", "in_progress": "[>]", "done": "[x]"}


@dataclass(frozen=True)
class TodoItem:
    text: str
    status: Status


class Todo:
    name = NAME
    kind: ToolKind = "read"  # it changes nothing outside the log: allowed in every mode
    description = (
        "A short checklist for work of several steps, shown to the user. Send the whole list each time (it "
        "replaces the last); keep one item in_progress and mark each done as soon as it is."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {
            "type": "object",
            "properties": {"text": {"type": "string"}, "status": {"type": "string", "enum": list(STATUSES)}},
            "required": ["text", "status"]}}},
        "required": ["items"],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        items = args.get("items")
        if not isinstance(items, list):
            return ""
        try:
            return progress(read_items(items))
        except ToolError:
            return f"{len(items)} items"

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        items = read_items(args["items"])
        return ToolOutput(list_text(items))


def read_items(raw: Sequence[Any]) -> list[TodoItem]:
    """The list as sent, checked: each item an object with a non-empty text and a known status
    (the spellings of other agents' task tools accepted). Raises ToolError saying what is wrong."""
    if len(raw) > MAX_ITEMS:
        raise ToolError(f"todo: at most {MAX_ITEMS} items; keep the plan short")
    items = []
    for number, entry in enumerate(raw, 1):
        if not isinstance(entry, dict):
            raise ToolError(f"todo: item {number} must be an object with text and status")
        text = entry.get("text", entry.get("content"))
        if not isinstance(text, str) or not text.strip():
            raise ToolError(f"todo: item {number} has no text")
        status = entry.get("status")
        if not isinstance(status, str):
            raise ToolError(f"todo: item {number} has no status (pending, in_progress or done)")
        known = status.strip().lower()
        known = _SYNONYMS.get(known, known)
        if known not in STATUSES:
            raise ToolError(f"todo: item {number} has status {status!r}; one of pending, in_progress, done")
        text = " ".join(text.split())
        items.append(TodoItem(text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…", known))
    return items


def progress(items: Sequence[TodoItem]) -> str:
    """`2 of 5 done`, and the item in progress."""
    done = sum(1 for i in items if i.status == "done")
    working = next((i.text for i in items if i.status == "in_progress"), None)
    return f"{done} of {len(items)} done" + (f"; now: {working}" if working else "")


def list_text(items: Sequence[TodoItem]) -> str:
    """The list as the model reads it back, and as the log keeps it."""
    if not items:
        return "todo list cleared"
    return "\n".join([f"todo list ({progress(items)}):", *(f"{MARKS[i.status]} {i.text}" for i in items)])


def current_todos(calls: Iterable[tuple[dict[str, Any], bool]]) -> list[TodoItem] | None:
    """The list in force after these todo calls (each its input and whether its result was an
    error), oldest first: the last accepted one. None when no call was accepted."""
    found: list[TodoItem] | None = None
    for args, is_error in calls:
        if is_error:
            continue
        raw = args.get("items") if isinstance(args, dict) else None
        if isinstance(raw, list):
            try:
                found = read_items(raw)
            except ToolError:
                continue
    return found


def todos_in(events: Iterable[Event]) -> list[TodoItem] | None:
    """The list in force at the end of these events (a session's, read in order)."""
    asked: dict[str, dict[str, Any]] = {}
    calls: list[tuple[dict[str, Any], bool]] = []
    for event in events:
        if isinstance(event, AssistantEvent):
            asked.update({str(b.get("id")): b.get("input") or {} for b in event.content
                          if b.get("type") == "tool_use" and b.get("name") == NAME})
        elif isinstance(event, ToolResultEvent) and event.tool == NAME and event.tool_use_id in asked:
            calls.append((asked.pop(event.tool_use_id), event.is_error))
    return current_todos(calls)
