"""A server's `tools/list` answer, turned into the definitions the model is sent.

Pure: the same listing always gives the same definitions, in the server's order, which is what
lets a session pin them. A tool the API could not take (no name, an input schema that is not an
object schema) is left out with the reason, never sent to fail every request of the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .spec import unique_names

# Long enough for any honest description; a server's essay would sit in every request.
MAX_DESCRIPTION = 4096


@dataclass(frozen=True)
class ListedTool:
    """One tool as the session offers it: the server's own name for it, the definition sent to
    the model (namespaced name, description, input schema exactly as the server gave it), and
    whether the server marks it read-only (`annotations.readOnlyHint`)."""

    tool: str
    definition: dict[str, Any]
    read_only: bool

    @property
    def name(self) -> str:
        return str(self.definition["name"])


def listed_tools(server: str, tools: list[Any]) -> tuple[list[ListedTool], list[str]]:
    """Definitions for `tools` (MCP Tool objects as JSON) and one line per tool left out."""
    usable: list[dict[str, Any]] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for item in tools:
        problem = _problem(item)
        if problem is None and item["name"] in seen:
            problem = "listed twice"
        if problem is not None:
            label = item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else "?"
            skipped.append(f"{label}: {problem}")
            continue
        seen.add(item["name"])
        usable.append(item)
    out = []
    for item, (_, name) in zip(usable, unique_names(server, [t["name"] for t in usable]), strict=True):
        definition: dict[str, Any] = {"name": name}
        description = item.get("description") or item.get("title") or ""
        if isinstance(description, str) and description.strip():
            if len(description) > MAX_DESCRIPTION:
                description = description[: MAX_DESCRIPTION - 1] + "…"
            definition["description"] = description
        definition["input_schema"] = item["inputSchema"]
        annotations = item.get("annotations")
        read_only = isinstance(annotations, dict) and annotations.get("readOnlyHint") is True
        out.append(ListedTool(item["name"], definition, read_only))
    return out, skipped


def _problem(item: Any) -> str | None:
    if not isinstance(item, dict):
        return "not a tool object"
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return "no name"
    schema = item.get("inputSchema")
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return "its input schema is not a JSON Schema of type object"
    return None
