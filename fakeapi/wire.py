"""The bytes the Messages API puts on the wire: message JSON, SSE events, error bodies.

Event order and shapes follow the real streaming API, because the SDK's
`MessageStream` accumulator rebuilds the final message from them: content blocks
start empty (`text: ""`, `input: {}`), text grows by `text_delta`, tool input by
`input_json_delta` fragments that only parse once joined, and `message_delta`
carries the stop reason and the final `output_tokens`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from .script import Reply
from .tokens import canonical_json, count_tokens

__all__ = [
    "ERROR_TYPES",
    "encode_sse",
    "error_body",
    "error_type_for",
    "json_bytes",
    "message_json",
    "output_tokens",
    "stream_events",
]

ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_WORDS = re.compile(r"\S+\s*|\s+")


def error_type_for(status: int) -> str:
    return ERROR_TYPES.get(status, "invalid_request_error" if status < 500 else "api_error")


def error_body(status: int, message: str, request_id: str, error_type: str | None = None) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": error_type or error_type_for(status), "message": message},
        "request_id": request_id,
    }


def output_tokens(reply: Reply) -> int:
    """Tokens of everything the model 'wrote': text plus tool-input JSON, at least 1."""
    parts = [b["text"] if b["type"] == "text" else canonical_json(b["input"]) for b in reply.blocks]
    return max(1, count_tokens("".join(parts)))


def within_max_tokens(reply: Reply, max_tokens: int) -> Reply:
    """The reply as a model stopped at `max_tokens` writes it: text past the budget is cut (at
    the fake tokenizer's four bytes a token) and the stop reason is `max_tokens`, as a real
    server's would be. A reply within the budget, or one whose budget ends inside a tool call
    (a script's agent call), is left whole."""
    if max_tokens <= 0 or output_tokens(reply) <= max_tokens:
        return reply
    room = max_tokens * 4  # bytes
    kept: list[dict[str, Any]] = []
    for block in reply.blocks:
        if block["type"] != "text":
            return reply
        data = block["text"].encode("utf-8")
        if len(data) <= room:
            kept.append(block)
            room -= len(data)
            continue
        kept.append({**block, "text": data[:room].decode("utf-8", "ignore")})
        break
    return Reply([b for b in kept if b["text"]], stop_reason="max_tokens")


def _final_block(block: dict[str, Any]) -> dict[str, Any]:
    if block["type"] == "text":
        return {"type": "text", "text": block["text"], "citations": None}
    return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]}


def message_json(
    reply: Reply, *, message_id: str, model: str, usage: dict[str, Any], stop_reason: str | None = None
) -> dict[str, Any]:
    """A complete (non-streamed) Message object."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_final_block(b) for b in reply.blocks],
        "stop_reason": stop_reason or reply.stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def _text_chunks(text: str, words_per_chunk: int = 3) -> list[str]:
    words = _WORDS.findall(text)
    return ["".join(words[k : k + words_per_chunk]) for k in range(0, len(words), words_per_chunk)]


def _json_pieces(value: dict[str, Any], pieces: int = 3) -> list[str]:
    # The real API streams tool input as arbitrary fragments of the JSON text, so the
    # client can only parse the concatenation; cutting mid-token exercises that.
    raw = json.dumps(value, ensure_ascii=False)
    step = max(1, -(-len(raw) // pieces))
    return [raw[k : k + step] for k in range(0, len(raw), step)]


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    start: dict[str, Any]
    if block["type"] == "text":
        start = {"type": "text", "text": "", "citations": None}
        deltas = [{"type": "text_delta", "text": chunk} for chunk in _text_chunks(block["text"])]
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        # The API opens every tool input with an empty fragment.
        deltas = [{"type": "input_json_delta", "partial_json": ""}]
        deltas += [{"type": "input_json_delta", "partial_json": p} for p in _json_pieces(block["input"])]
    events: list[tuple[str, dict[str, Any]]] = [
        ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})
    ]
    if index == 0:
        events.append(("ping", {"type": "ping"}))
    events += [
        ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
    ]
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def stream_events(
    reply: Reply, *, message_id: str, model: str, usage: dict[str, Any], stop_reason: str | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The full SSE event sequence for `reply`, as (event name, data) pairs."""
    start_usage = dict(usage)
    start_usage["output_tokens"] = 1  # the API reports a placeholder until message_delta
    start = message_json(Reply([]), message_id=message_id, model=model, usage=start_usage)
    start["stop_reason"] = None
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    if not reply.blocks:
        events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(reply.blocks):
        events += _block_events(index, block)
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason or reply.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# How a server or proxy reports usage in a stream: "full" as the API does; "omitted": neither
# message_start's message nor message_delta has a `usage` key; "null": both hold `usage: null`;
# "no_delta": message_start has it, message_delta does not (some proxies rebuild that event);
# "no_start": no message_start at all, the stream opens with content_block_start (llama.cpp's
# server does this when the answer's first token is part of a character, such as an emoji).
UsageHabit = Literal["full", "omitted", "null", "no_delta", "no_start"]


def with_usage_habit(events: list[tuple[str, dict[str, Any]]], habit: UsageHabit) -> list[tuple[str, dict[str, Any]]]:
    """`events` as a server of that habit would send them."""
    if habit == "full":
        return events
    shaped: list[tuple[str, dict[str, Any]]] = []
    for name, data in events:
        if name == "message_start" and habit == "no_start":
            continue
        if name == "message_start" and habit in ("omitted", "null"):
            message = {k: v for k, v in data["message"].items() if k != "usage"}
            if habit == "null":
                message["usage"] = None
            data = {**data, "message": message}
        elif name == "message_delta" and habit != "no_start":
            data = {k: v for k, v in data.items() if k != "usage"}
            if habit == "null":
                data["usage"] = None
        shaped.append((name, data))
    return shaped


def json_bytes(payload: Any) -> bytes:
    """UTF-8 JSON as the API sends it. A lone surrogate (which no UTF-8 can carry) goes out as a
    `\\udXXX` escape, as a JSON encoder on the real server's side would write it."""
    try:
        return json.dumps(payload, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(payload, ensure_ascii=True).encode("ascii")


def encode_sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (event.encode(), json_bytes(data))
