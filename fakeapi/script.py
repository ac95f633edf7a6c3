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
from typing import Any, Literal, get_args

__all__ = [
    "EXHAUSTED_TEXT",
    "FAULT_KINDS",
    "MALFORMED_SSE",
    "STREAM_CONTENT_TYPE",
    "Fault",
    "FaultKind",
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


FaultKind = Literal["status", "drop", "cut", "short", "no_stop", "null_stop", "garble", "body", "hang", "stall",
                    "slow_start"]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
STREAM_CONTENT_TYPE = "text/event-stream; charset=utf-8"
# A data line whose JSON breaks off: what a proxy that mangles a stream might pass on.
MALFORMED_SSE = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delt\n\n'


@dataclass
class Fault:
    """A failure to inject instead of a reply.

    Answers that never arrive:
    kind="status":    answer `status` with an Anthropic-style error body.
    kind="drop":      close the connection without answering at all.
    kind="hang":      read the request, then send nothing for `hang_s` seconds (None: until the
                      server stops), then hang up: a server that accepted the call and froze.

    Streams that go wrong after a 200 (`reply`, or a text reply, is what is being streamed; a
    non-streamed request gets the first half of its JSON body and a hang-up instead):
    kind="cut":       close the connection abruptly after `after_events` SSE events.
    kind="stall":     send `after_events` events, then nothing for `hang_s` seconds (None:
                      until the server stops), then hang up: a stream frozen mid-answer.
    kind="short":     end the stream cleanly (a proper last chunk) after `after_events` events:
                      a server that closes after some text as if it were done.
    kind="no_stop":   every event but the final `message_stop`, then a clean end.
    kind="null_stop": every event, but `message_delta` carries `stop_reason: null`.
    kind="slow_start": the 200 and its headers at once, then nothing for `hang_s` seconds, then
                      the whole stream: a local server (llama.cpp) evaluating a long prompt
                      before its first event. Not a failure: the answer is whole.
    kind="garble":    `after_events` events, then the bytes `garbage` (by default a data line
                      whose JSON breaks off, MALFORMED_SSE), then the rest of the events.

    A 200 that is not an event stream at all:
    kind="body":      answer 200 with exactly `body` as `content_type` (HTML, plain JSON, bytes
                      that are not UTF-8, or nothing), whatever the request asked for.

    `retry_after_ms` is sent (with `retry-after: 0`) on retryable statuses: the SDK
    ignores a zero `retry-after` and would back off ~0.5 s, while a positive
    `retry-after-ms` makes its retry immediate. None sends neither header.
    """

    status: int = 500
    message: str = ""
    kind: FaultKind = "status"
    after_events: int = 3
    reply: Reply | None = None
    retry_after_ms: int | None = 1
    body: bytes = b""
    content_type: str = STREAM_CONTENT_TYPE
    garbage: bytes = MALFORMED_SSE
    hang_s: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown Fault kind {self.kind!r}")
        if self.kind == "status" and not 400 <= self.status <= 599:
            raise ValueError(f"Fault status must be an HTTP error status, got {self.status}")
        if self.after_events < 0:
            raise ValueError(f"after_events must not be negative, got {self.after_events}")


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
