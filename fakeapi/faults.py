"""How a faulty stream goes wrong: which SSE bytes are sent, and how the response then ends.

Kept apart from the server so each fault of `Fault`'s list is a few readable lines here, and the
server only sends what this returns.
"""

from __future__ import annotations

from typing import Any

from .script import FAULT_KINDS, Fault
from .transport import StreamEnding
from .wire import encode_sse

__all__ = ["STREAM_FAULTS", "shape_stream"]

# Faults answered before any stream starts (the server handles them itself).
BEFORE_STREAM = frozenset({"status", "drop", "hang", "body"})
# Every other fault starts a 200 stream and then breaks it.
STREAM_FAULTS = frozenset(FAULT_KINDS) - BEFORE_STREAM


def shape_stream(events: list[tuple[str, dict[str, Any]]], fault: Fault | None) -> tuple[list[bytes], StreamEnding]:
    """The chunks to send for a reply's `events` under `fault` (None: the stream as it should be)."""
    if fault is None:
        return [encode_sse(name, data) for name, data in events], "end"
    head = [encode_sse(name, data) for name, data in events[: fault.after_events]]
    if fault.kind == "cut":
        return head, "cut"
    if fault.kind == "stall":
        return head, "stall"
    if fault.kind == "slow_start":
        return [encode_sse(name, data) for name, data in events], "end"
    if fault.kind == "short":
        return head, "end"
    if fault.kind == "garble":
        rest = [encode_sse(name, data) for name, data in events[fault.after_events:]]
        return [*head, fault.garbage, *rest], "end"
    if fault.kind == "no_stop":
        return [encode_sse(name, data) for name, data in events if name != "message_stop"], "end"
    if fault.kind == "null_stop":
        return [encode_sse(name, _without_stop_reason(data) if name == "message_delta" else data)
                for name, data in events], "end"
    raise ValueError(f"Fault kind {fault.kind!r} is not a stream fault")


def _without_stop_reason(data: dict[str, Any]) -> dict[str, Any]:
    return {**data, "delta": {**data["delta"], "stop_reason": None}}
