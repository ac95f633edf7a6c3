"""render(log) -> request: the one pure function between what happened and what the model sees.

Order is the cache's order: tools, then system (instructions, then observation chunks), then the
raw events not yet observed as messages. Nothing here reads a clock, a file or the environment:
the same events give the same bytes, in any process, which is what keeps the prompt prefix
cached from one call to the next.

Breakpoints (at most four, as the API allows):
  1. the instructions block: tools + instructions are cached for the whole session;
  2. the last observation chunk: a new chunk appends, so older chunks stay a cached prefix;
  3. the last block of the second-to-last user message: exactly where the previous call's
     breakpoint 4 was, so each call reads the whole of the previous call's prompt;
  4. the last block of the last user message: written for the next call to read.

A user event's images (log/images.py) are sent as image blocks before its text. Their bytes are
not in the log but beside it (log/attachments.py): render reads them through the `images` source
it is given, and is a pure function of the log and that store. An image the source does not have
is sent as a fixed line saying so (MISSING_IMAGE), never an error: the session goes on;
`scribe log prompt` passes a source that refuses instead, since it promises the exact bytes.

A long tool output is shown as a preview of `preview_chars` (context/preview.py), or of
`settled_output_chars` once its turn had ended when the latest observation chunk was made (see
Settled): what a request shows of an event changes only when a chunk is added, which rewrites
the tail anyway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from scribe.context.preview import UNSETTLED, OutputView, Settled
from scribe.log.chunks import ChunkIndex, tail_after
from scribe.log.events import (
    AssistantEvent,
    Block,
    Event,
    FileChangeEvent,
    GitUndoEvent,
    HookEvent,
    InterruptEvent,
    ModeEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UndoEvent,
    UserEvent,
)
from scribe.log.images import ImageRef, image_refs

CACHE = {"type": "ephemeral"}
# How long the provider keeps what a CACHE breakpoint writes: the 5-minute cache.
CACHE_TTL_S = 300.0
# Stands first when the raw tail begins mid-conversation (after compression), since the API
# requires messages to open with a user turn. Fixed text: it is part of the cached prefix.
RESUME_NOTE = "(Earlier parts of this session are summarised in the observations above.)"
INTERRUPTED = "[interrupted: this tool call did not finish; its result is unknown]"
# Why an interrupt was recorded, when it was the person who stopped the request (Esc or Ctrl-C
# in the REPL, Ctrl-C in `scribe run`; "interrupted" is the reason of logs that named none).
PERSON_CANCELLED = ("cancelled by the user", "stopped by SIGINT", "interrupted")
MISSING_IMAGE = "[image {name} was attached here; it is no longer in the session's image store]"


class ImageSource(Protocol):
    """Where render reads an attached image's bytes (log/attachments.py ImageStore)."""

    def base64(self, ref: ImageRef) -> str | None:
        """The image as base64 text, or None when it is missing."""
        ...


class NoImages:
    """A source with no images: every image renders as its MISSING_IMAGE line."""

    def base64(self, ref: ImageRef) -> str | None:
        return None


class RenderError(ValueError):
    """The events cannot form a request (no session event first)."""


@dataclass(frozen=True)
class Request:
    model: str
    max_tokens: int
    tools: list[dict[str, Any]]
    system: list[Block]
    messages: list[dict[str, Any]]
    # Bookkeeping for callers, not sent: the last seq the observation chunks cover.
    observed_to: int = field(default=-1, compare=False)
    # Side calls only: the one tool the model must answer with (the agent's calls never force one).
    tool_choice: dict[str, Any] | None = None

    @classmethod
    def one_shot(cls, model: str, system: str, user: str, max_tokens: int, *,
                 tool: dict[str, Any] | None = None) -> Request:
        """A request with one user message: the observer's, reflector's and curator's calls
        (their prompts are built from the log, not rendered from it). With `tool`, the model is
        asked to answer through that one tool (a forced tool call)."""
        tools = [tool] if tool else []
        choice = {"type": "tool", "name": tool["name"]} if tool else None
        return cls(model=model, max_tokens=max_tokens, tools=tools, system=[{"type": "text", "text": system}],
                   messages=[{"role": "user", "content": [{"type": "text", "text": user}]}], tool_choice=choice)

    def params(self) -> dict[str, Any]:
        """Keyword arguments for `client.messages.stream` (no `tools` key when there are none)."""
        params: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.tools:
            params["tools"] = self.tools
        if self.tool_choice:
            params["tool_choice"] = self.tool_choice
        return {**params, "system": self.system, "messages": self.messages}

    def body(self) -> dict[str, Any]:
        """The JSON body as the API receives it from a streaming call."""
        return {**self.params(), "stream": True}


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def prefix_blocks(request: Request) -> list[str]:
    """The request as the cache sees it: one canonical string per block, in prefix order,
    without cache_control (moving a breakpoint does not change the prefix)."""
    return [block_key(role, block) for role, block in cache_view(request)]


def cache_view(request: Request) -> list[tuple[str, Block]]:
    """The blocks of `prefix_blocks` before they are made strings: (role, block without
    cache_control) in prefix order; role is "" for tool definitions and system blocks. Two
    requests share a cached prefix exactly as far as these compare equal."""
    return [(role, {k: v for k, v in block.items() if k != "cache_control"}) for role, block in _in_prefix_order(request)]


def block_key(role: str, block: Block) -> str:
    """One entry of `prefix_blocks`: the block's canonical JSON, after its role for a message."""
    return f"{role}:{canonical_json(block)}" if role else canonical_json(block)


def breakpoints(request: Request) -> list[int]:
    """Positions, in `prefix_blocks` order, of the blocks that carry a cache breakpoint: where
    this request asks the cache to write an entry that a later request can read."""
    return [i for i, (_, block) in enumerate(_in_prefix_order(request)) if "cache_control" in block]


def _in_prefix_order(request: Request) -> list[tuple[str, Block]]:
    out: list[tuple[str, Block]] = [("", t) for t in request.tools]
    out += [("", b) for b in request.system]
    for message in request.messages:
        out += [(message["role"], b) for b in message["content"]]
    return out


def render(events: Sequence[Event], index: ChunkIndex | None = None, images: ImageSource | None = None) -> Request:
    """The request for the next model call. `index` (a ChunkIndex kept for this log) saves
    rescanning a long log for its observations; the result is the same with or without it.
    `images`: the session's image store (none: attached images render as missing)."""
    if not events or not isinstance(events[0], SessionEvent):
        raise RenderError("a log must begin with a session event")
    session = events[0]
    recorded = session.recorded
    index = index or ChunkIndex()
    chunks, observed_to = index.update(events)

    system: list[Block] = [{"type": "text", "text": session.system, "cache_control": CACHE}]
    system += [{"type": "text", "text": chunk_text(chunk)} for chunk in chunks]
    if chunks:
        system[-1]["cache_control"] = CACHE

    settled = Settled(index.settled_before, recorded.settled_output_chars)
    messages = render_messages(index.shown(tail_after(events, observed_to)), OutputView.of(recorded), settled,
                               images or NoImages())
    if not messages or messages[0]["role"] != "user":
        messages.insert(0, {"role": "user", "content": [{"type": "text", "text": RESUME_NOTE}]})
    place_message_breakpoints(messages)

    return Request(
        model=current_model(events, index),
        max_tokens=recorded.max_tokens,
        tools=[dict(t) for t in session.tools],
        system=system,
        messages=messages,
        observed_to=observed_to,
    )


def current_model(events: Sequence[Event], index: ChunkIndex | None = None) -> str:
    """The model of the next call: the latest switch, else the one the session began with."""
    index = index or ChunkIndex()
    index.update(events)
    header = events[0]
    assert isinstance(header, SessionEvent)
    return index.model or header.recorded.model


def chunk_text(chunk: ObservationEvent | ReflectionEvent) -> str:
    if isinstance(chunk, ObservationEvent):
        return f"<observations events=\"{chunk.seq_from}-{chunk.seq_to}\">\n{chunk.text.strip()}\n</observations>"
    return f"<observations reflected=\"{chunk.seq}\">\n{chunk.text.strip()}\n</observations>"


def render_messages(events: Sequence[Event], outputs: OutputView, settled: Settled = UNSETTLED,
                    images: ImageSource | None = None) -> list[dict[str, Any]]:
    """Raw events as alternating turns. A user turn collects, in order: the results of the
    previous assistant's tool calls (first, as the API requires, in call order; a call with no
    result gets a fixed "interrupted" one), then text (file changes, the person's images and words).

    A request that was cancelled (an interrupt event) is closed by an assistant message holding
    a fixed marker (`cancel_text`): what the person says next is a message of its own, and the
    model reads that the request before it was cancelled and what had run of it."""
    images = images or NoImages()
    messages: list[dict[str, Any]] = []
    pending_ids: list[str] = []  # tool_use ids of the last assistant message
    results: dict[str, Block] = {}
    texts: list[Block] = []
    turn = _TurnCalls()  # the tool calls of the request in progress, for a cancel's marker

    def close_user_turn() -> None:
        nonlocal pending_ids, results, texts
        blocks = [results.get(i) or _tool_result(i, INTERRUPTED, True) for i in pending_ids]
        blocks += texts
        if blocks:
            messages.append({"role": "user", "content": blocks})
        pending_ids, results, texts = [], {}, []

    for event in events:
        if isinstance(event, AssistantEvent):
            content = [b for b in event.content if not (b.get("type") == "text" and not str(b.get("text", "")).strip())]
            if not content:
                continue
            close_user_turn()
            messages.append({"role": "assistant", "content": content})
            pending_ids = [b["id"] for b in content if b.get("type") == "tool_use"]
            turn.asked(content)
        elif isinstance(event, ToolResultEvent):
            if event.tool_use_id in pending_ids and event.tool_use_id not in results:
                turn.ran(event.tool_use_id)
                results[event.tool_use_id] = _tool_result(event.tool_use_id, outputs.text(event, settled),
                                                          event.is_error, event.blocks)
        elif isinstance(event, InterruptEvent):
            for tool_use_id in event.tool_use_ids:
                if tool_use_id in pending_ids and tool_use_id not in results:
                    results[tool_use_id] = _tool_result(tool_use_id, INTERRUPTED, True)
            # Closed only while the person's side is open: a request whose answer had come, or
            # that an earlier marker closed, has nothing left to cancel.
            if pending_ids or texts:
                close_user_turn()
                messages.append({"role": "assistant", "content": [{"type": "text", "text": cancel_text(event, turn)}]})
            turn = _TurnCalls()
        elif isinstance(event, UserEvent):
            turn = _TurnCalls()
            if event.images:
                texts += [image_block(ref, images) for ref in image_refs(event.images)]
            if event.text.strip():
                texts.append({"type": "text", "text": event.text})
        elif isinstance(event, FileChangeEvent):
            texts.append({"type": "text", "text": file_change_text(event)})
        elif isinstance(event, GitUndoEvent):
            texts.append({"type": "text", "text": git_undo_text(event)})
        elif isinstance(event, UndoEvent):
            texts.append({"type": "text", "text": undo_text(event)})
        elif isinstance(event, HookEvent) and event.feedback:
            texts.append({"type": "text", "text": hook_text(event)})
        elif isinstance(event, ModeEvent) and (said := mode_text(event)) is not None:
            texts.append({"type": "text", "text": said})
    close_user_turn()
    return messages


@dataclass
class _TurnCalls:
    """The tool calls asked for since the person's last message (tool_use id -> tool name), in
    order, and those that had a result."""

    names: dict[str, str] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)

    def asked(self, content: Sequence[Block]) -> None:
        self.names.update((b["id"], str(b.get("name", "?"))) for b in content if b.get("type") == "tool_use")

    def ran(self, tool_use_id: str) -> None:
        self.done.add(tool_use_id)


def cancel_text(event: InterruptEvent, turn: _TurnCalls) -> str:
    """The fixed marker that closes a cancelled request: who stopped it, what of it had run,
    and that it stays stopped. Built from the log alone, so it is the same bytes every time."""
    if event.reason in PERSON_CANCELLED:
        said = "The person cancelled this request before it finished"
    else:
        said = f"This request was stopped before it finished ({event.reason})"
    ran = _counted([name for i, name in turn.names.items() if i in turn.done])
    not_run = _counted([name for i, name in turn.names.items() if i not in turn.done])
    parts = [f"what had run: {ran}" if ran else "no tool had run"]
    if not_run:
        parts.append(f"not run: {not_run}")
    return f"[{said}; {'; '.join(parts)}. It stays cancelled unless the person asks for it again.]"


def _counted(names: Sequence[str]) -> str:
    """`read_file ×2, run_command`: each name once, in first-seen order, with its count."""
    counts = {name: names.count(name) for name in names}
    return ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.items())


def image_block(ref: ImageRef, images: ImageSource) -> Block:
    """An attached image as the API takes it, or the line saying it is missing."""
    data = images.base64(ref)
    if data is None:
        return {"type": "text", "text": MISSING_IMAGE.format(name=ref.name)}
    return {"type": "image", "source": {"type": "base64", "media_type": ref.media_type, "data": data}}


def _tool_result(tool_use_id: str, text: str, is_error: bool, extra: Sequence[Block] = ()) -> Block:
    """A tool_result block: the text alone, or (an MCP tool's images) the text then its blocks."""
    content: str | list[Block] = [{"type": "text", "text": text}, *extra] if extra else text
    block: Block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def file_change_text(event: FileChangeEvent) -> str:
    if event.kind == "many":
        where = "" if event.path in ("", ".") else f" under {event.path}"
        return (f"[outside scribe: {event.count} more files changed{where}, too many to list; "
                "list_files or git status shows them]")
    what = f"moved to {event.dest}" if event.kind == "moved" and event.dest else event.kind
    note = "; it changed since you last read it" if event.stale else ""
    if event.during_command:
        return f"[while your command ran: {event.path} was {what}{note}]"
    return f"[outside scribe: {event.path} was {what}{note}]"


PLAN_MODE = "plan"


def mode_text(event: ModeEvent) -> str | None:
    """What the model is told of a change of permission mode: entering plan mode and leaving it
    (the plan accepted); other changes show in what its calls are allowed, and are not said."""
    if event.mode == PLAN_MODE and event.previous != PLAN_MODE:
        return ("[Plan mode: the user wants a plan before any change. Read, search and research as you need; "
                "edits, commands and other changes are refused until the user accepts the plan. End your answer "
                "with the plan: the steps, the files each one touches, and how you will check the result.]")
    if event.previous == PLAN_MODE and event.mode != PLAN_MODE:
        return (f"[Plan mode ended: the user accepted the plan, and the permission mode is now {event.mode}. "
                "Carry out the plan.]")
    return None


def hook_text(event: HookEvent) -> str:
    """What the model is shown of a hook's run: its feedback, under a line naming the hook."""
    tool = event.extra.get("tool")
    on = f" on {tool}" if isinstance(tool, str) and tool else ""
    return f"[{event.hook} hook{on}]\n{event.feedback}"


def git_undo_text(event: GitUndoEvent) -> str:
    files = ", ".join(event.files) or "no files"
    return (f"[the person undid scribe's commit {event.sha[:10]}: HEAD is back at {event.head[:10]}, "
            f"and {files} are as they were before that commit]")


def undo_text(event: UndoEvent) -> str:
    restored = [p for p in event.files if p not in event.removed]
    parts = [f"{', '.join(restored)} {'is' if len(restored) == 1 else 'are'} as before it"] if restored else []
    if event.removed:
        parts.append(f"{', '.join(event.removed)}, which it created, {'is' if len(event.removed) == 1 else 'are'} "
                     "removed")
    return (f"[the person undid your file changes of the turn at seq {event.turn} (/undo): "
            f"{'; '.join(parts) or 'no files changed'}]")


def place_message_breakpoints(messages: list[dict[str, Any]]) -> None:
    user_turns = [m for m in messages if m["role"] == "user"]
    for message in user_turns[-2:]:
        last = dict(message["content"][-1])
        last["cache_control"] = CACHE
        message["content"] = [*message["content"][:-1], last]
