"""Prompt-cache accounting that mirrors Anthropic's documented prompt caching.

A request is flattened into an ordered list of blocks: tool definitions, then
system blocks, then every message's content blocks (a mid-conversation system
message's too, where it stands). A block carrying
`cache_control` is a breakpoint. The cache maps the hash of a prefix (model +
blocks up to a breakpoint) to that prefix's size and expiry.

For each request the longest live prefix found at a breakpoint, or up to 20
blocks before one, is a read; every breakpoint whose prefix is big enough is
written (or refreshed). This module is pure apart from its lock: time comes in
as `now`, so tests can age entries without sleeping.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any

from .tokens import block_tokens, canonical_json, strip_cache_control

__all__ = ["LOOKBACK_BLOCKS", "CacheUsage", "FlatBlock", "PromptCache", "flatten_request", "prefix_hashes"]

# The API checks the breakpoint position and the 19 boundaries before it.
LOOKBACK_BLOCKS = 20
ONE_HOUR_S = 3600.0


@dataclass(frozen=True)
class FlatBlock:
    """One cacheable unit: `kind` is "tool", "system" (the top-level field), "user", "assistant"
    or "system message" (a message of role "system", part of the conversation like any other)."""

    kind: str
    block: dict[str, Any]
    tokens: int
    ttl: str | None  # breakpoint TTL ("5m" or "1h"), None when not a breakpoint

    @property
    def is_breakpoint(self) -> bool:
        return self.ttl is not None


@dataclass(frozen=True)
class CacheUsage:
    """Input-side usage of one request; the three token fields always sum to `total_tokens`."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int
    total_tokens: int

    def to_usage(self, output_tokens: int) -> dict[str, Any]:
        """The `usage` object as the Messages API returns it."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }


def _ttl_of(block: Any) -> str | None:
    """The breakpoint TTL a block declares, looking inside tool_result content too."""
    if not isinstance(block, dict):
        return None
    control = block.get("cache_control")
    if isinstance(control, dict):
        return "1h" if control.get("ttl") == "1h" else "5m"
    content = block.get("content")
    if isinstance(content, list):
        # A breakpoint nested in a tool_result can only cut the prefix after the
        # whole tool_result block, since that block is the unit being flattened.
        for item in content:
            ttl = _ttl_of(item)
            if ttl is not None:
                return ttl
    return None


def _flat(kind: str, block: dict[str, Any]) -> FlatBlock:
    return FlatBlock(kind, strip_cache_control(block), block_tokens(block), _ttl_of(block))


def flatten_request(request: dict[str, Any]) -> list[FlatBlock]:
    """Tools, then system, then message content, in the order the model reads them."""
    flat: list[FlatBlock] = [_flat("tool", tool) for tool in request.get("tools") or []]
    system = request.get("system")
    if isinstance(system, str):
        if system:
            flat.append(_flat("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        flat.extend(_flat("system", block) for block in system)
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            # "" is only legal as a final assistant prefill, which adds nothing to the prompt.
            blocks = [{"type": "text", "text": content}] if content else []
        else:
            blocks = content or []
        role = message.get("role", "user")
        kind = "system message" if role == "system" else role
        flat.extend(_flat(kind, block) for block in blocks)
    top_level = request.get("cache_control")
    if isinstance(top_level, dict) and flat and not flat[-1].is_breakpoint:
        # Automatic caching: the API places the marker on the last cacheable block.
        last = flat[-1]
        flat[-1] = FlatBlock(
            last.kind, last.block, last.tokens, "1h" if top_level.get("ttl") == "1h" else "5m"
        )
    return flat


def prefix_hashes(model: str, blocks: list[FlatBlock], tool_choice: Any = None) -> list[str]:
    """hashes[i] identifies model + blocks[0..i]; chaining makes each O(1) to extend.

    `tool_choice` is part of the identity of every message block, not of tools or system: a
    change of tool_choice leaves the tools and system prompt cached and the messages not, as
    Anthropic's prompt caching documents (a side call that forced a tool could not read the
    agent's cached conversation)."""
    digest = hashlib.sha256(("model:" + model).encode("utf-8")).hexdigest()
    hashes: list[str] = []
    choice_mixed = False
    for block in blocks:
        if not choice_mixed and block.kind not in ("tool", "system"):
            choice_mixed = True
            if tool_choice is not None:
                digest = hashlib.sha256((digest + "\x00tool_choice:" + canonical_json(tool_choice)).encode()).hexdigest()
        # The kind is part of identity: the same text as system or as a user turn is
        # a different prompt to the model.
        piece = block.kind + "\x00" + canonical_json(block.block)
        digest = hashlib.sha256((digest + "\x00" + piece).encode("utf-8")).hexdigest()
        hashes.append(digest)
    return hashes


@dataclass
class _Entry:
    tokens: int
    expires_at: float
    ttl_s: float


class PromptCache:
    """The server-side cache of one fake server instance."""

    def __init__(self, min_tokens: int = 1024, ttl_s: float = 300.0) -> None:
        self.min_tokens = min_tokens
        self.ttl_s = ttl_s
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.reads = 0
        self.writes = 0

    def _ttl_seconds(self, ttl: str | None) -> float:
        return ONE_HOUR_S if ttl == "1h" else self.ttl_s

    def _live(self, key: str, now: float) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry.expires_at <= now:
            del self._entries[key]
            return None
        return entry

    def account(self, request: dict[str, Any], now: float) -> CacheUsage:
        """Look up and update the cache for `request`, returning its input usage."""
        blocks = flatten_request(request)
        hashes = prefix_hashes(str(request.get("model", "")), blocks, request.get("tool_choice"))
        cumulative: list[int] = []
        running = 0
        for block in blocks:
            running += block.tokens
            cumulative.append(running)
        total = running
        breakpoints = [i for i, block in enumerate(blocks) if block.is_breakpoint]

        with self._lock:
            hit = -1
            for bp in breakpoints:
                for pos in range(bp, max(bp - LOOKBACK_BLOCKS, -1), -1):
                    if self._live(hashes[pos], now) is not None:
                        hit = max(hit, pos)
                        break
            if hit >= 0:
                entry = self._entries[hashes[hit]]
                entry.expires_at = now + entry.ttl_s
                self.reads += 1
            read = cumulative[hit] if hit >= 0 else 0

            by_ttl = {"5m": 0, "1h": 0}
            written_upto = hit
            for bp in breakpoints:
                if cumulative[bp] < self.min_tokens:
                    continue
                ttl_s = self._ttl_seconds(blocks[bp].ttl)
                live = self._live(hashes[bp], now)
                if live is None:
                    self._entries[hashes[bp]] = _Entry(cumulative[bp], now + ttl_s, ttl_s)
                    self.writes += 1
                else:
                    live.expires_at = max(live.expires_at, now + ttl_s)
                if bp > written_upto:
                    # Tokens between the previous write (or the hit) and this
                    # breakpoint are billed at this breakpoint's TTL rate.
                    start = cumulative[written_upto] if written_upto >= 0 else 0
                    by_ttl[blocks[bp].ttl or "5m"] += cumulative[bp] - start
                    written_upto = bp
        created = by_ttl["5m"] + by_ttl["1h"]
        return CacheUsage(
            input_tokens=total - read - created,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=created,
            ephemeral_5m_input_tokens=by_ttl["5m"],
            ephemeral_1h_input_tokens=by_ttl["1h"],
            total_tokens=total,
        )

    def stats(self, now: float) -> dict[str, int]:
        """Live entry count plus how many requests read and how many entries were written."""
        with self._lock:
            live = sum(1 for key in list(self._entries) if self._live(key, now) is not None)
            return {"entries": live, "reads": self.reads, "writes": self.writes}
