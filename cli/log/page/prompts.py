"""Each agent call's prompt as `scribe log prompt --at` rebuilds it, what of it the cache served,
and what broke the cache.

A call's prompt is `render(events[:i])` (context/render.py), seen as the cache sees it: the
blocks of `prefix_blocks` (made from `cache_view`, as render.py does). Embedding every prompt whole would grow with calls x prompt size, so
each distinct block is stored once (`BlockStore`) and a prompt is a list of references.

Which blocks were served from the cache follows the cache's rules over the prompts this log
shows: an entry is written at each breakpoint of a call; a later call of the same model, within
the five-minute lifetime, reads the longest prefix that ends at such an entry, found at one of
its own breakpoints or up to 20 blocks before one. The usage event says how much the server
really read: a call it billed no cache read for is marked as reading nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from scribe.context.render import CACHE_TTL_S, Request, block_key, breakpoints, cache_view, render
from scribe.log.chunks import ChunkIndex
from scribe.log.events import Event, UsageEvent
from scribe.log.images import ImageRef

LOOKBACK_BLOCKS = 20  # how far before a breakpoint the cache looks for an entry


class ImageNames:
    """An attached image as the page's prompts hold it: a line naming it and its sha256, not its
    base64 (a page would otherwise carry every image whole; two images are the same block
    exactly when their hashes are, so the cache is modelled the same)."""

    def base64(self, ref: ImageRef) -> str | None:
        return f"[{ref.describe()}, sha256 {ref.sha256}: `scribe log prompt --at` gives its base64]"


IMAGE_NAMES = ImageNames()


@dataclass(frozen=True)
class CallPrompt:
    usage_seq: int
    at: int  # seq of the assistant event: `scribe log prompt --at AT` prints this request
    model: str
    blocks: tuple[int, ...]  # references into the BlockStore, in prefix order
    tools: int  # how many of the blocks are tool definitions,
    system: int  # and how many system blocks follow them
    breakpoints: tuple[int, ...]  # positions of the blocks that carry cache_control
    cached: int  # blocks [0, cached) were served from the cache
    differs_at: int | None  # the first block that differs from the previous agent call's prompt
    was: int | None  # the previous call's block at that position
    reason: str  # in words: what the cache did for this call, and why


class BlockStore:
    """Each distinct block once; a block is referred to by its position here."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._ids: dict[str, int] = {}

    def ref(self, text: str) -> int:
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self.texts)
            self.texts.append(text)
        return found


class PromptTrack:
    """Follows a log's agent calls in order, one at a time (a live page adds them as they come).

    The cache is modelled over prefixes: a prefix is a node of a trie of block references, so
    two prompts share an entry exactly when they share the blocks up to it."""

    def __init__(self, store: BlockStore) -> None:
        self.store = store
        self.calls: dict[int, CallPrompt] = {}  # by usage seq
        self._index = ChunkIndex()
        self._trie: dict[tuple[int, int], int] = {}
        self._entries: dict[tuple[str, int], float] = {}  # (model, prefix node) -> last written or read
        self._prev: CallPrompt | None = None
        self._prev_nodes: list[int] = []
        self._prev_start: float | None = None
        self._prev_view: list[tuple[str, dict[str, Any]]] = []

    def add(self, events: Sequence[Event], assistant_index: int, usage: UsageEvent) -> CallPrompt:
        """The call answered by `events[assistant_index]` and billed by `usage`."""
        request = render(events[:assistant_index], self._index, IMAGE_NAMES)
        view = cache_view(request)
        # The prompt mostly repeats the previous one: compare blocks as they are, and make the
        # canonical strings (prefix_blocks's) only of those that differ.
        same = _shared_prefix(self._prev_view, view)
        previous = self._prev.blocks if self._prev is not None else ()
        blocks = previous[:same] + tuple(self.store.ref(block_key(role, block)) for role, block in view[same:])
        nodes = self._nodes(blocks)
        points = tuple(breakpoints(request))
        start = _start_time(usage)

        prev = self._prev
        differs_at: int | None = None
        if prev is not None:
            shared = _shared_prefix(prev.blocks, blocks)
            if shared < len(prev.blocks):
                differs_at = shared
        cached = self._read(request.model, nodes, points, start) if usage.cache_read > 0 else 0
        for p in points:
            self._touch(request.model, nodes[p], start)

        call = CallPrompt(
            usage_seq=usage.seq, at=events[assistant_index].seq, model=request.model, blocks=blocks,
            tools=len(request.tools), system=len(request.system), breakpoints=points, cached=cached,
            differs_at=differs_at, was=prev.blocks[differs_at] if prev is not None and differs_at is not None else None,
            reason=self._reason(request, usage, cached, differs_at, start))
        self.calls[usage.seq] = call
        self._prev, self._prev_nodes, self._prev_start, self._prev_view = call, nodes, start, view
        return call

    def _nodes(self, blocks: tuple[int, ...]) -> list[int]:
        prev = self._prev.blocks if self._prev is not None else ()
        shared = _shared_prefix(prev, blocks)
        nodes = self._prev_nodes[:shared]
        node = nodes[-1] if nodes else -1
        for block in blocks[shared:]:
            key = (node, block)
            node = self._trie.get(key, -1)
            if node < 0:
                node = self._trie[key] = len(self._trie)
            nodes.append(node)
        return nodes

    def _live(self, model: str, node: int, start: float | None) -> bool:
        written = self._entries.get((model, node))
        return written is not None and (start is None or start - written <= CACHE_TTL_S)

    def _read(self, model: str, nodes: list[int], points: tuple[int, ...], start: float | None) -> int:
        """How many leading blocks the cache served: the longest live entry found from a breakpoint."""
        best = 0
        for point in points:
            for p in range(point, max(-1, point - LOOKBACK_BLOCKS - 1), -1):
                if p + 1 <= best:
                    break
                if self._live(model, nodes[p], start):
                    best = p + 1
                    break
        if best:
            self._touch(model, nodes[best - 1], start)  # a read keeps the entry alive
        return best

    def _touch(self, model: str, node: int, start: float | None) -> None:
        self._entries[(model, node)] = start if start is not None else 0.0

    def _reason(self, request: Request, usage: UsageEvent, cached: int,
                differs_at: int | None, start: float | None) -> str:
        prev = self._prev
        said: list[str] = []
        if prev is None:
            said.append("The session's first call: nothing of it was cached yet, so its prompt was written "
                        "to the cache.")
        else:
            if request.model != prev.model:
                said.append(f"The model changed from {prev.model} to {request.model}: the cache is kept per "
                            "model, so this call wrote its prompt anew.")
            if start is not None and self._prev_start is not None and start - self._prev_start > CACHE_TTL_S:
                said.append(f"{_duration(start - self._prev_start)} since the previous call: past the cache's "
                            "5-minute lifetime, so its entries had expired.")
            if differs_at is not None:
                said.append(f"What broke the cache: block {differs_at + 1} ({block_label(request, differs_at)}) "
                            "is the first block that differs from the previous call's prompt; the cache serves "
                            "only a matching prefix, so everything from there on was written anew.")
            elif not said:
                said.append("The previous call's prompt is a prefix of this one; nothing broke the cache.")
        if cached:
            said.append(f"Blocks 1-{cached} came from the cache.")
        elif usage.cache_read:
            said.append(f"The server billed {usage.cache_read:,} tokens as cache reads of a prefix this log does not "
                        "show being written (an earlier session with the same tools and instructions, most likely).")
        else:
            said.append("Nothing was read from the cache.")
        return " ".join(said)


def block_label(request: Request, position: int) -> str:
    """Where a block sits in the request, in words: a tool definition, a system block, or a block
    of the n-th message."""
    tools, system = len(request.tools), len(request.system)
    if position < tools:
        name = request.tools[position].get("name", "?")
        return f"the definition of tool {name}"
    if position < tools + system:
        k = position - tools
        return "the system instructions" if k == 0 else f"system block {k + 1}, observation chunk {k}"
    offset = position - tools - system
    for number, message in enumerate(request.messages, start=1):
        if offset < len(message["content"]):
            kind = message["content"][offset].get("type", "?")
            return f"message {number} ({message['role']}), its {kind} block {offset + 1}"
        offset -= len(message["content"])
    return "?"


def _shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _start_time(usage: UsageEvent) -> float | None:
    """When the call was sent: its usage was logged when it ended, `latency_ms` after."""
    try:
        ended = datetime.fromisoformat(usage.ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    if ended.tzinfo is None:
        return None
    return ended.timestamp() - usage.latency_ms / 1000


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:.0f} minutes" if minutes < 120 else f"{minutes / 60:.1f} hours"
