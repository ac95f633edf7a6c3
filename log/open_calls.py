"""tool_use / tool_result pairing over a log: which calls of the last assistant message are
still open. A call is closed by its tool_result or by an interrupt event naming it."""

from __future__ import annotations

from collections.abc import Sequence

from scribe.log.events import AssistantEvent, Event, InterruptEvent, ToolResultEvent


def unanswered_tool_uses(events: Sequence[Event]) -> list[str]:
    """tool_use ids of the last assistant message that have neither a result nor an interrupt."""
    last = next((i for i in range(len(events) - 1, -1, -1) if isinstance(events[i], AssistantEvent)), None)
    if last is None:
        return []
    assistant = events[last]
    assert isinstance(assistant, AssistantEvent)
    ids = [b["id"] for b in assistant.content if b.get("type") == "tool_use"]
    answered: set[str] = set()
    for event in events[last + 1:]:
        if isinstance(event, ToolResultEvent):
            answered.add(event.tool_use_id)
        elif isinstance(event, InterruptEvent):
            answered.update(event.tool_use_ids)
    return [i for i in ids if i not in answered]
