"""What the fake model says: scripted replies, injected faults, and the queue of them.

A test describes a conversation as a list of `Reply` and `Fault` items that the
server hands out one per accepted request, or as a callable that decides from
the request itself. Faults consume a slot like replies do, so the SDK's retry
naturally receives the next item.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "EXHAUSTED_TEXT",
    "Fault",
    "Reply",
    "Responder",
    "Script",
    "ScriptItem",
    "text_block",
    "tool_use_block",
]

EXHAUSTED_TEXT = "(fake server: script exhausted)"

# A process-wide counter keeps generated ids unique even across servers, so a test
# that mixes replies from two scripts never sees two tool_use blocks share an id.
_tool_ids = itertools.count(1)


def text_block(text: str) -> dict[str, Any]:
    """An assistant text content block."""
    return {"type": "text", "text": text}


def tool_use_block(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    """An assistant tool_use content block; `id` defaults to a fresh `toolu_01...` id."""
    if id is None:
        id = f"toolu_01fake{next(_tool_ids):012d}"
    return {"type": "tool_use", "id": id, "name": name, "input": dict(input)}


@dataclass
class Reply:
    """One assistant message. stop_reason defaults from the blocks, as the model's would."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None

    def __post_init__(self) -> None:
        for block in self.blocks:
            if block.get("type") not in ("text", "tool_use"):
                raise ValueError(f"Reply blocks must be text or tool_use, got {block!r}")
        if self.stop_reason is None:
            uses_tool = any(b["type"] == "tool_use" for b in self.blocks)
            self.stop_reason = "tool_use" if uses_tool else "end_turn"

    @classmethod
    def text(cls, text: str) -> Reply:
        """Shorthand for a reply made of one text block."""
        return cls([text_block(text)])


@dataclass
class Fault:
    """A failure to inject instead of a reply.

    kind="status": answer `status` with an Anthropic-style error body.
    kind="drop":   close the connection without answering at all.
    kind="cut":    start streaming `reply` (or a text reply) and close the
                   connection abruptly after `after_events` SSE events.

    `retry_after_ms` is sent (with `retry-after: 0`) on retryable statuses: the SDK
    ignores a zero `retry-after` and would back off ~0.5 s, while a positive
    `retry-after-ms` makes its retry immediate. None sends neither header.
    """

    status: int = 500
    message: str = ""
    kind: Literal["status", "drop", "cut"] = "status"
    after_events: int = 3
    reply: Reply | None = None
    retry_after_ms: int | None = 1

    def __post_init__(self) -> None:
        if self.kind not in ("status", "drop", "cut"):
            raise ValueError(f"unknown Fault kind {self.kind!r}")
        if self.kind == "status" and not 400 <= self.status <= 599:
            raise ValueError(f"Fault status must be an HTTP error status, got {self.status}")


ScriptItem = Reply | Fault
Responder = Callable[[dict[str, Any]], ScriptItem]


class Script:
    """Hands out the next item for each accepted request; safe to call from many threads."""

    def __init__(self, source: Sequence[ScriptItem] | Responder | None) -> None:
        self._lock = threading.Lock()
        self._responder: Responder | None = None
        self._items: list[ScriptItem] = []
        if callable(source):
            self._responder = source
        elif source is not None:
            self._items = list(source)
        self._next = 0

    def next_item(self, request: dict[str, Any]) -> ScriptItem:
        """The item answering `request`; a responder's exceptions propagate to the caller."""
        if self._responder is not None:
            item = self._responder(request)
            if not isinstance(item, (Reply, Fault)):
                raise TypeError(f"responder must return Reply or Fault, got {type(item).__name__}")
            return item
        with self._lock:
            if self._next >= len(self._items):
                return Reply([text_block(EXHAUSTED_TEXT)], stop_reason="end_turn")
            item = self._items[self._next]
            self._next += 1
            return item

    @property
    def remaining(self) -> int:
        """Unconsumed list items (0 for a responder)."""
        with self._lock:
            return len(self._items) - self._next
