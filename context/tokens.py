"""Token estimates: fast, local, and calibrated against what the API reports.

A model call reports `input_tokens + cache_read + cache_write`: the true size of the prompt.
Comparing that with our estimate of the same prompt gives a per-session factor that corrects
the estimate for this model's tokenizer and this session's kind of text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from scribe.context.preview import OutputView, Settled
from scribe.log.events import (
    AssistantEvent,
    Event,
    FileChangeEvent,
    GitUndoEvent,
    HookEvent,
    SessionEvent,
    ToolResultEvent,
    UndoEvent,
    UserEvent,
)
from scribe.log.images import image_refs

# Characters per token for code and English with Claude's tokenizer, before calibration.
CHARS_PER_TOKEN = 3.6
# Per-block framing the API adds (role markers, block headers); small but not zero.
BLOCK_OVERHEAD = 4
# An image or document block sent with a tool result: the API bills an image by its pixels,
# about 1,600 tokens for a screenshot-sized one (calibration corrects the rest).
BLOCK_TOKENS = 1600


def estimate_text(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0


def event_tokens(event: Event, shown: str | None = None) -> int:
    """Estimated tokens this event adds to a prompt when rendered raw (0 if it is not rendered).
    `shown`: what the renderer shows of a tool output (its preview), when not the output whole."""
    if isinstance(event, UserEvent):
        # An attached image is billed by its pixels (log/images.py), whatever its bytes.
        pictures = sum(ref.tokens + BLOCK_OVERHEAD for ref in image_refs(event.images)) if event.images else 0
        return estimate_text(event.text) + BLOCK_OVERHEAD + pictures
    if isinstance(event, AssistantEvent):
        return sum(estimate_text(b.get("text") or json.dumps(b.get("input", b), ensure_ascii=False))
                   + BLOCK_OVERHEAD for b in event.content)
    if isinstance(event, ToolResultEvent):
        size = len(event.output if shown is None else shown)
        return int(size / CHARS_PER_TOKEN) + 1 + BLOCK_OVERHEAD + len(event.blocks) * BLOCK_TOKENS
    if isinstance(event, FileChangeEvent):
        return estimate_text(event.path) + estimate_text(event.dest or "") + 16
    if isinstance(event, (GitUndoEvent, UndoEvent)):
        return estimate_text(" ".join(event.files)) + 40
    if isinstance(event, HookEvent):
        return estimate_text(event.feedback) + 16 if event.feedback else 0
    # An observation or reflection is rendered among the chunks, never raw (its size there is
    # memory/reflector.py's chunk_size): counted here too, it inflated the raw tail by its own
    # size, which let the retention floor be met by it and a just-pasted text be observed.
    return 0


@dataclass
class TokenEstimator:
    """Per-session estimates: each event is estimated once (events never change), and the
    factor learnt from reported usage scales the sum."""

    # How the session shows tool outputs (its recorded config); None: whole.
    outputs: OutputView | None = None
    factor: float = 1.0
    # Tool outputs before this seq are rendered short (preview.Settled), at most settled_chars.
    # The Compressor copies it from the session's ChunkIndex before each estimate.
    settled_before: int = -1
    settled_chars: int = 12_000
    _cache: dict[int, int] = field(default_factory=dict)
    _settled: dict[int, int] = field(default_factory=dict)

    def of(self, event: Event) -> int:
        """What `event` adds to the next request, as render shows it now."""
        return self.settled(event) if event.seq < self.settled_before else self._shown(event)

    def settled(self, event: Event) -> int:
        """What `event` adds once settled: a tool output is shown at most `settled_chars`."""
        if not isinstance(event, ToolResultEvent):
            return self._shown(event)
        size = self._settled.get(event.seq)
        if size is None:
            outputs = self.outputs or OutputView(self.settled_chars)
            shown = outputs.text(event, Settled(event.seq + 1, self.settled_chars))
            size = self._settled[event.seq] = event_tokens(event, shown)
        return size

    def _shown(self, event: Event) -> int:
        size = self._cache.get(event.seq)
        if size is None:
            shown = self.outputs.text(event) if self.outputs and isinstance(event, ToolResultEvent) else None
            size = self._cache[event.seq] = event_tokens(event, shown)
        return size

    def total(self, events: Iterable[Event]) -> int:
        return int(sum(self.of(e) for e in events) * self.factor)

    def learn(self, calls: Iterable[Sequence[int]]) -> None:
        """Calibrate from earlier calls' (estimated, reported) tokens, oldest first: a reopened
        session's estimator starts where the process that made them had got to."""
        for estimated_raw, reported in calls:
            self.calibrate(estimated_raw, reported)

    def calibrate(self, estimated_raw: int, reported: int) -> None:
        """Move the factor toward reported/estimated (an average, so one odd call can't swing it)."""
        if estimated_raw <= 0 or reported <= 0:
            return
        observed = reported / estimated_raw
        self.factor = observed if self.factor == 1.0 else 0.7 * self.factor + 0.3 * observed


def fixed_tokens(header: SessionEvent, *, tools: bool = True) -> int:
    """Instructions and tool definitions: the part of every request that never changes.
    `tools` False: a server that drops the request's tools (a chat template without any)
    counts the instructions alone."""
    defined = estimate_text(json.dumps(header.tools, ensure_ascii=False)) if tools else 0
    return estimate_text(header.system) + defined
