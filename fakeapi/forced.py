"""How a model answers a side call that forces a tool (`tool_choice` of type `tool`), in three
habits real servers have:

    honour     a tool_use of the named tool whose input fits its schema (what the API, and a
               server with grammar-constrained decoding, gives)
    ignore     no tool_use: the server drops `tools` (llama.cpp for a chat template without
               them) and the model writes text, in its text habit (habits.py)
    malformed  a tool_use of the named tool whose input does not fit: the list it should hold
               written as one string of prose

A request that forces no tool is answered in the text habit whatever the tool habit is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .habits import PROSE_TEXT, Entry, Said
from .script import Reply, tool_use_block

__all__ = ["TOOL_HABITS", "forced_tool", "notes_reply", "observations_reply"]

TOOL_HABITS = ("honour", "ignore", "malformed")
_PRIORITY = {"🔴": "must_keep", "🟡": "useful", "🟢": "background", "✅": "done"}


def forced_tool(request: dict[str, Any]) -> str | None:
    """The name of the tool a request forces, or None."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool" and isinstance(choice.get("name"), str):
        return choice["name"]
    return None


def observations_reply(name: str, said: Said, habit: str) -> Reply:
    if habit == "malformed":
        return Reply([tool_use_block(name, {"observations": PROSE_TEXT})])
    items = [{"priority": _PRIORITY[tag], "text": text} for tag, text in said.lines]
    return Reply([tool_use_block(name, {"observations": items, "current_task": said.current_task or "",
                                        "next_step": said.next_step or ""})])


def notes_reply(name: str, entries: Sequence[Entry], habit: str) -> Reply:
    if habit == "malformed":
        return Reply([tool_use_block(name, {"entries": PROSE_TEXT})])
    items = [{"text": e.text, **({"source": e.source} if e.source else {}), **({"heading": e.heading} if e.heading else {})}
             for e in entries]
    return Reply([tool_use_block(name, {"entries": items})])
