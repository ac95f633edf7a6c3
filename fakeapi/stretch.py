"""What a side call asks a fake model to read, on either of scribe's routes (memory/routes.py).

A separate side call names its kind in its system prompt ("You are the Observer ...") and holds
what to read in its one user message. A side call through the cache is the agent's own request
with the kind's instructions as the last user block; what to read is in the request itself: the
first N messages for an observer, the first N observation blocks of the system prompt for a
reflector, N named by the instruction. This module reads either as a model would, and writes it
the way the separate route does ("Events to observe ...", "Observations to condense ..."), so a
fake model's habits answer both alike. Nothing here knows which facts a test planted.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["side_call_body", "side_call_kind"]

_KINDS = {"You are the Observer": "observer", "You are the Reflector": "reflector", "You are the Curator": "curator"}
_FIRST_N = re.compile(r"the first (\d+) (?:messages|<observations> blocks)")
_SEQS = re.compile(r"seq (\d+)-(\d+)")
_WRAPPED = re.compile(r"^<observations [^>]*>\n(.*)\n</observations>$", re.DOTALL)


def _kind_of(text: str) -> str | None:
    return next((kind for start, kind in _KINDS.items() if text.startswith(start)), None)


def _system_text(request: dict[str, Any]) -> str:
    system = request.get("system")
    if isinstance(system, list) and system and isinstance(system[0], dict):
        return str(system[0].get("text", ""))
    return system if isinstance(system, str) else ""


def instruction(request: dict[str, Any]) -> str:
    """The last text block of the last user message: a through-the-cache side call's instruction."""
    messages = request.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    return texts[-1] if texts else ""


def side_call_kind(request: dict[str, Any]) -> str:
    """"observer", "reflector", "curator", or "agent" for any other call, on either route."""
    return _kind_of(_system_text(request)) or _kind_of(instruction(request)) or "agent"


def through_cache(request: dict[str, Any]) -> bool:
    """A side call made of the agent's request and an instruction (not its own system prompt)."""
    return _kind_of(_system_text(request)) is None and _kind_of(instruction(request)) is not None


def side_call_body(request: dict[str, Any]) -> str:
    """What the side call gives to read, as the separate route writes it."""
    if not through_cache(request):
        first = request["messages"][0]["content"]
        return first if isinstance(first, str) else str(first[0].get("text", ""))
    said = instruction(request)
    count = int(m.group(1)) if (m := _FIRST_N.search(said)) else 0
    if side_call_kind(request) == "reflector":
        blocks = [b.get("text", "") for b in request["system"][1:] if str(b.get("text", "")).startswith("<observations")]
        texts = [m.group(1) if (m := _WRAPPED.match(t)) else t for t in blocks[:count]]
        return "Observations to condense:\n\n" + "\n".join(texts) + "\n\n" + said.rsplit("\n", 2)[-2]
    first, last = (int(m.group(1)), int(m.group(2))) if (m := _SEQS.search(said)) else (0, 0)
    lines = _message_lines(request["messages"][:count], first, last)
    return f"Events to observe (seq {first}-{last}):\n" + "\n".join(lines)


def _message_lines(messages: list[dict[str, Any]], first: int, last: int) -> list[str]:
    """The messages as the separate route's event lines. A model reading messages sees no seq
    numbers; each line gets the next number of the stretch's range, as a reader counting would."""
    lines: list[str] = []
    names: dict[str, str] = {}
    seq = first
    for message in messages:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            kind = block.get("type")
            if kind == "text" and str(block.get("text", "")).strip():
                who = "user" if message["role"] == "user" else "assistant"
                lines.append(f"[seq {seq}] {who}: {block['text']}")
            elif kind == "tool_use":
                names[str(block.get("id"))] = str(block.get("name"))
                lines.append(f"[seq {seq}] assistant: calls {block.get('name')} "
                             f"{json.dumps(block.get('input', {}), ensure_ascii=False)}")
            elif kind == "tool_result":
                body = block.get("content")
                text = body if isinstance(body, str) else "\n".join(
                    b.get("text", "") for b in body or [] if isinstance(b, dict))
                status = "error" if block.get("is_error") else "ok"
                lines.append(f"[seq {seq}] {names.get(str(block.get('tool_use_id')), 'tool')} result ({status}):\n{text}")
            else:
                continue
            seq = min(seq + 1, max(last, first))
    return lines
