"""Deterministic stand-in for the model tokenizer.

The fake server needs token counts that are stable across runs and roughly the
size real ones would be, so that cache thresholds (1024 tokens) and usage
numbers behave like the real API's. Four UTF-8 bytes per token is close enough
to Claude's tokenizer on code and English, and costs nothing to compute.
"""

from __future__ import annotations

import json
from typing import Any

from .images import image_tokens

__all__ = ["block_tokens", "canonical_json", "count_tokens", "strip_cache_control"]


def count_tokens(text: str) -> int:
    """Return ceil(utf8_bytes / 4); any non-empty text is at least one token."""
    # surrogatepass: a lone surrogate in a reply (a fault worth testing) still has a size.
    size = len(text.encode("utf-8", "surrogatepass"))
    return (size + 3) // 4


def canonical_json(value: Any) -> str:
    """Serialise `value` the same way every time, so equal blocks hash and count equal."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def strip_cache_control(block: Any) -> Any:
    """Return `block` without `cache_control`, also inside nested tool_result content.

    cache_control marks where a prefix may be cached; it is not content, so moving
    a breakpoint must not change the identity or size of any block.
    """
    if not isinstance(block, dict):
        return block
    out = {k: v for k, v in block.items() if k != "cache_control"}
    if isinstance(out.get("content"), list):
        out["content"] = [strip_cache_control(item) for item in out["content"]]
    return out


def block_tokens(block: Any) -> int:
    """Token size of one content block or tool definition, breakpoint marker excluded. An image
    counts as the API bills it, by its pixels (fakeapi/images.py), not by its base64's length,
    alone or inside a tool result."""
    block = strip_cache_control(block)
    if not isinstance(block, dict):
        return count_tokens(canonical_json(block))
    pictures = image_tokens(block)
    if pictures is not None:
        return pictures
    content = block.get("content")
    if block.get("type") == "tool_result" and isinstance(content, list):
        billed = [(item, image_tokens(item) if isinstance(item, dict) else None) for item in content]
        rest = [item for item, tokens in billed if tokens is None]
        return count_tokens(canonical_json({**block, "content": rest})) + sum(t for _, t in billed if t)
    return count_tokens(canonical_json(block))
