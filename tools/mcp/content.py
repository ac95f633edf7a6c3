"""What an MCP tool result becomes: text the model reads, content blocks the API takes with it
(images, PDFs), and the rest kept in the log as the server sent it.

A pure function of the result as JSON (the MCP wire shape), so it is the same in every process
and tested without a server. Everything a server sends is checked here, once, at call time:
an image whose data is not base64, or of a type the API does not take, is described and kept,
never sent, so one odd answer cannot make every later request of the session fail.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from scribe.tools.textio import human_bytes

# What the Messages API takes inside a tool_result: images up to 5 MB each, counted in base64 (a
# 4 MB PNG is 5.3 MB of base64, and refused).
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BASE64 = 5 * 1024 * 1024
MAX_PDF_BYTES = 10 * 1024 * 1024
# Binary data beyond this is not kept in the log either (a runaway server must not fill it).
MAX_KEPT_BASE64 = 16 * 1024 * 1024

Block = dict[str, Any]


@dataclass(frozen=True)
class ResultParts:
    text: str
    is_error: bool
    # API content blocks sent after the text (image, document).
    blocks: list[Block] = field(default_factory=list)
    # Non-text content the API cannot take (audio, binary resources, links), as sent.
    attachments: list[Block] = field(default_factory=list)
    dropped_bytes: int = 0


def result_parts(result: dict[str, Any], cap_bytes: int) -> ResultParts:
    """Turn a CallToolResult (as JSON) into what the log keeps and the model sees. `cap_bytes`
    bounds the text like a command's output: head and tail, the middle counted."""
    content = result.get("content")
    if not isinstance(content, list):
        content = []
    lines: list[str] = []
    blocks: list[Block] = []
    attachments: list[Block] = []
    for item in content:
        if not isinstance(item, dict):
            lines.append(f"[content item that is not an object: {_short(item)}]")
            continue
        kind = item.get("type")
        if kind == "text":
            lines.append(str(item.get("text", "")))
        elif kind == "image":
            lines.append(_image(item, blocks, attachments))
        elif kind == "resource":
            lines.append(_resource(item, blocks, attachments))
        elif kind == "resource_link":
            attachments.append(item)
            lines.append(_link(item))
        else:
            kept = _kept(item)
            attachments.append(kept)
            size = _data_size(item)
            what = f"{item.get('mimeType', '')} {kind}".strip() if kind == "audio" else f"{kind} content"
            lines.append(f"[{what}{f', {human_bytes(size)}' if size else ''}: not shown to the model; "
                         "the log keeps it]")
    structured = result.get("structuredContent")
    if not any(item.get("type") == "text" for item in content if isinstance(item, dict)) and structured is not None:
        # The spec asks servers to send structured results as text too; some send only the object.
        lines.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    text, dropped = cap_text("\n".join(lines), cap_bytes)
    return ResultParts(text, bool(result.get("isError")), blocks, attachments, dropped)


def cap_text(text: str, cap_bytes: int) -> tuple[str, int]:
    """Head and tail of `text` within `cap_bytes` (UTF-8), and how many bytes were dropped."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= cap_bytes:
        return text, 0
    head, tail = data[: cap_bytes // 2], data[-(cap_bytes // 2):]
    dropped = len(data) - len(head) - len(tail)
    return (f"{head.decode('utf-8', errors='ignore')}\n[… {human_bytes(dropped)} of output dropped …]\n"
            f"{tail.decode('utf-8', errors='ignore')}"), dropped


def _image(item: Block, blocks: list[Block], attachments: list[Block]) -> str:
    mime, data = str(item.get("mimeType", "")), item.get("data")
    decoded = _decoded_size(data)
    if decoded is None:
        attachments.append(_kept(item))
        return f"[image {mime}: its data is not valid base64, so it is not shown]"
    size = human_bytes(decoded)
    if mime not in IMAGE_TYPES:
        attachments.append(_kept(item))
        return f"[image {mime}, {size}: not shown (the API takes png, jpeg, gif and webp); the log keeps it]"
    if isinstance(data, str) and len(data) > MAX_IMAGE_BASE64:
        attachments.append(_kept(item))
        return f"[image {mime}, {size}: too large to show (the API takes up to 5 MB of base64); the log keeps it]"
    blocks.append({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
    return f"[image {mime}, {size}]"


def _resource(item: Block, blocks: list[Block], attachments: list[Block]) -> str:
    resource = item.get("resource")
    if not isinstance(resource, dict):
        attachments.append(_kept(item))
        return "[an embedded resource without contents]"
    uri, mime = str(resource.get("uri", "")), str(resource.get("mimeType", ""))
    label = f"{uri} ({mime})" if mime else uri
    if "text" in resource:
        return f"[resource {label}]\n{resource.get('text', '')}"
    decoded = _decoded_size(resource.get("blob"))
    if decoded is None:
        attachments.append(_kept(item))
        return f"[resource {label}: its data is not valid base64]"
    if mime == "application/pdf" and decoded <= MAX_PDF_BYTES:
        blocks.append({"type": "document",
                       "source": {"type": "base64", "media_type": mime, "data": resource["blob"]}})
        return f"[resource {label}, {human_bytes(decoded)}: the PDF follows]"
    attachments.append(_kept(item))
    return f"[resource {label}, {human_bytes(decoded)} of binary data: not shown to the model; the log keeps it]"


def _link(item: Block) -> str:
    name, uri = item.get("title") or item.get("name") or "", item.get("uri", "")
    mime = f" ({item['mimeType']})" if item.get("mimeType") else ""
    about = f": {item['description']}" if item.get("description") else ""
    return f"[resource link: {name} <{uri}>{mime}{about}]"


def _decoded_size(data: Any) -> int | None:
    """Bytes `data` decodes to, or None if it is not (strict) base64."""
    if not isinstance(data, str):
        return None
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return None


def _data_size(item: Block) -> int:
    return _decoded_size(item.get("data")) or 0


def _kept(item: Block) -> Block:
    """The item as sent, unless its binary data is too large to keep."""
    def too_big(value: Any) -> bool:
        return isinstance(value, str) and len(value) > MAX_KEPT_BASE64

    if too_big(item.get("data")):
        return {**item, "data": None, "dropped": f"{human_bytes(len(item['data']) * 3 // 4)} of data not kept"}
    resource = item.get("resource")
    if isinstance(resource, dict) and too_big(resource.get("blob")):
        return {**item, "resource": {**resource, "blob": None,
                                     "dropped": f"{human_bytes(len(resource['blob']) * 3 // 4)} not kept"}}
    return item


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 80 else text[:77] + "..."
