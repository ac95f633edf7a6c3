"""The Observer's side of memory, without the model call: which raw events to compress, how
they are shown to the observer model, and what counts as a usable answer.

Compression takes the oldest raw events up to a safe boundary (never between a tool call and
its result) and leaves a retention floor of recent events raw, so the model keeps the exact
words of what just happened.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from scribe.context.budget import fit_text
from scribe.context.render import file_change_text, git_undo_text, hook_text, undo_text
from scribe.context.tokens import TokenEstimator, estimate_text
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    GitUndoEvent,
    HookEvent,
    InterruptEvent,
    ToolResultEvent,
    UndoEvent,
    UserEvent,
)
from scribe.log.images import image_refs

from .answer import Answer, UnusableAnswer
from .observations import TAGS, Observations, read_observations

# How much of each tool output the observer sees: enough for what it showed, not all of it
# (the log keeps everything, and the observation names the seq to recall).
OBSERVER_OUTPUT_CHARS = 2_000
# How much of the existing observations the observer is shown, so it does not repeat them.
OBSERVATIONS_SHOWN = 2_000

OBSERVER_SYSTEM = """\
You are the Observer for a coding agent. You turn a stretch of its session (the user's messages, \
the agent's replies and tool calls, and tool outputs) into dense observations. They replace those \
events in the agent's memory, so anything you leave out is gone from its view.

Write one observation per line, each starting with a priority tag:
🔴 must keep: the user's goals and requests, decisions, constraints, preferences, facts the user stated.
🟡 useful: files read or changed (exact paths), what a command showed (exit status, key numbers, \
error text), findings about the code.
🟢 background: context that may help later.
✅ done: a step or task that is finished, with its outcome.

Rules:
- Keep exact paths, identifiers, numbers, commands and error messages as written; never paraphrase them.
- Do not repeat what the existing observations already say.
- Where an exact detail may be needed later (a long output, a file's content), name its event \
as (seq N): the agent can read any event back with its recall tool.
- No headings, no bullets other than the tags, no commentary.
- End with exactly two lines: "Current task: ..." and "Next step: ..."."""


@dataclass(frozen=True)
class Span:
    """A run of raw events chosen for observation: seq_from..seq_to inclusive."""

    seq_from: int
    seq_to: int
    tokens: int


def backoff_until(events: Sequence[Event], kind: str, cleared_by: type[Event]) -> int:
    """Tokens to exceed before trying a failed memory step again: the `until_tokens` of the last
    error of `kind`, unless a `cleared_by` event (a success) came after it. 0: no backoff. Read
    from the log, so a restarted process waits just as the one before would have."""
    for event in reversed(events):
        if isinstance(event, cleared_by):
            return 0
        if isinstance(event, ErrorEvent) and event.kind == kind:
            return int(event.extra.get("until_tokens", 0))
    return 0


def safe_boundaries(events: Sequence[Event]) -> list[int]:
    """Indexes i such that cutting after events[i] splits no tool call from its result."""
    safe: list[int] = []
    open_calls: set[str] = set()
    for i, event in enumerate(events):
        if isinstance(event, AssistantEvent):
            open_calls = {b["id"] for b in event.content if b.get("type") == "tool_use"}
        elif isinstance(event, ToolResultEvent):
            open_calls.discard(event.tool_use_id)
        elif isinstance(event, InterruptEvent):
            open_calls.difference_update(event.tool_use_ids)
        elif isinstance(event, UserEvent):
            open_calls = set()  # a new user turn: earlier open calls are closed by render
        if not open_calls:
            safe.append(i)
    return safe


def choose_span(raw: Sequence[Event], estimator: TokenEstimator, *, keep_tokens: int) -> Span | None:
    """The oldest raw events to observe, leaving at least `keep_tokens` of the newest raw.

    Returns None when no safe boundary leaves enough raw behind (nothing to do yet)."""
    sizes = [estimator.of(e) for e in raw]
    keep_raw = keep_tokens / estimator.factor  # sizes are uncalibrated estimates
    remaining = sum(sizes)
    boundaries = set(safe_boundaries(raw))
    best: int | None = None
    for i, size in enumerate(sizes):
        remaining -= size
        if remaining < keep_raw:
            break
        if i in boundaries:
            best = i
    if best is None:
        return None
    return Span(raw[0].seq, raw[best].seq, estimator.total(raw[: best + 1]))


def nothing_to_observe(raw: Sequence[Event], estimator: TokenEstimator, keep_tokens: int) -> str:
    """Why `choose_span` found nothing to observe in `raw`: it is within the retention floor, or
    its oldest part that can be cut off alone would go below it."""
    total = estimator.total(raw)
    if total <= keep_tokens:
        return (f"nothing to summarise yet: the conversation since the last summary (~{total:,} tokens) is "
                f"within the ~{keep_tokens:,} tokens always kept word for word")
    cut = safe_boundaries(raw)
    oldest = estimator.total(raw[: cut[0] + 1]) if cut else total
    return (f"nothing to summarise yet: of the ~{total:,} tokens since the last summary, the newest "
            f"~{keep_tokens:,} are always kept word for word, and the oldest part that can be summarised alone "
            f"(~{oldest:,} tokens) would leave less than that")


def clip_span(raw: Sequence[Event], span: Span, room: int, view: Callable[[Event], int],
              estimator: TokenEstimator) -> Span:
    """The oldest part of `span` (which starts at raw[0]) whose observer input fits in `room`
    estimated tokens, cut at a safe boundary. When not even the first safe boundary fits, the
    span ends there and `observer_input` cuts the text: an observation must always make progress,
    or a log past the limit could never be compressed again."""
    end = _index_of(raw, span.seq_to)
    used = 0
    best: int | None = None
    boundaries = safe_boundaries(raw[: end + 1])
    at = 0
    for i in boundaries:
        used += sum(view(e) for e in raw[at: i + 1])
        at = i + 1
        if used > room:
            break
        best = i
    if best is None:
        best = boundaries[0] if boundaries else end
    if best == end:
        return span
    return Span(raw[0].seq, raw[best].seq, estimator.total(raw[: best + 1]))


def _index_of(raw: Sequence[Event], seq: int) -> int:
    start = raw[0].seq
    if 0 <= seq - start < len(raw) and raw[seq - start].seq == seq:
        return seq - start
    return next(i for i, e in enumerate(raw) if e.seq == seq)


def focus_line(focus: str) -> str:
    """What the person asked a compaction to keep in view (`/compact FOCUS`), said to the Observer."""
    return (f"The person asked for this compaction with a focus: {focus.strip()}. Keep everything that bears on it "
            "in full detail (🔴), and be briefer about the rest.")


def observer_input(previous: Sequence[str], events: Sequence[Event], *, tail_tokens: int = OBSERVATIONS_SHOWN,
                   room: int | None = None, focus: str = "") -> str:
    """The user message for the observer: the tail of existing observations, then the events,
    then the person's focus, if they gave one. With `room`, the whole message stays within that
    many estimated tokens."""
    if room is not None:
        tail_tokens = min(tail_tokens, room // 4)
    shown: list[str] = []
    used = 0
    for text in reversed(previous):
        used += estimate_text(text)
        if shown and used > tail_tokens:
            break
        shown.append(text)
    shown.reverse()
    parts = []
    if shown:
        existing = "Existing observations (most recent last; do not repeat them):\n" + "\n".join(shown)
        parts.append(existing if room is None else fit_text(existing, tail_tokens, "the agent has them all"))
    lines = "\n".join(filter(None, (event_line(e) for e in events)))
    first, last = events[0].seq, events[-1].seq
    body = f"Events to observe (seq {first}-{last}):\n{lines}"
    asked = focus_line(focus) if focus.strip() else ""
    if room is not None:
        body = fit_text(body, room - sum(estimate_text(p) for p in parts) - estimate_text(asked) - 4,
                        f"recall seq {first}-{last}")
    parts.append(body)
    if asked:
        parts.append(asked)
    return "\n\n".join(parts)


def event_line(event: Event) -> str:
    """One event as the observer reads it; tool outputs capped (their seq says where the rest is)."""
    if isinstance(event, UserEvent):
        pictures = "".join(f"\n  [attached image {ref.describe()}: recall(seq_from={event.seq}) says where it is kept]"
                           for ref in image_refs(event.images))
        return f"[seq {event.seq}] user: {event.text}{pictures}"
    if isinstance(event, AssistantEvent):
        parts = []
        for block in event.content:
            if block.get("type") == "text" and block.get("text", "").strip():
                parts.append(block["text"])
            elif block.get("type") == "tool_use":
                parts.append(f"calls {block['name']} {json.dumps(block.get('input', {}), ensure_ascii=False)}")
        return f"[seq {event.seq}] assistant: " + "\n  ".join(parts) if parts else ""
    if isinstance(event, ToolResultEvent):
        status = "error" if event.is_error else "ok"
        if event.exit_code not in (None, 0):
            status += f", exit {event.exit_code}"
        output = event.output
        if len(output) > OBSERVER_OUTPUT_CHARS:
            half = OBSERVER_OUTPUT_CHARS // 2
            output = f"{output[:half]}\n[… {len(output) - 2 * half} characters omitted; recall seq {event.seq} …]\n{output[-half:]}"
        return f"[seq {event.seq}] {event.tool} result ({status}):\n{output}"
    if isinstance(event, FileChangeEvent):
        return f"[seq {event.seq}] {file_change_text(event)}"
    if isinstance(event, GitUndoEvent):
        return f"[seq {event.seq}] {git_undo_text(event)}"
    if isinstance(event, UndoEvent):
        return f"[seq {event.seq}] {undo_text(event)}"
    if isinstance(event, InterruptEvent):
        return f"[seq {event.seq}] interrupted: {event.reason}"
    if isinstance(event, HookEvent) and event.feedback:
        return f"[seq {event.seq}] {hook_text(event)}"
    return ""


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


# The priority legend of the instructions, as a small model copies it back ("🔴 must keep: the
# user's goals and requests, ..."): tagged lines that say nothing of the events.
_LEGEND = tuple(_words(line[1:]) for line in OBSERVER_SYSTEM.splitlines() if line[:1] in TAGS)
ECHO_MIN_WORDS = 3  # "🔴 must keep" is already the legend; a word or two alone is not


def echoes_instructions(text: str) -> bool:
    """Whether an observation's text is a piece of the instructions' legend."""
    words = _words(text)
    return len(words.split()) >= ECHO_MIN_WORDS and any(words in legend or legend in words for legend in _LEGEND)


def read_observer_answer(answer: Answer) -> Observations:
    """The observer's reader: every tagged line of the answer in the canonical form, or
    UnusableAnswer. A line cut by max_tokens is left out and the rest kept: the events it did
    cover are observed, and the log still holds every one of them for `recall`. Lines that
    repeat the instructions' legend are left out; an answer of nothing else is unusable (a
    model-free summary then keeps the person's own words instead)."""
    read = read_observations(answer)
    kept = tuple(line for line in read.lines if not echoes_instructions(line.text))
    if not kept:
        raise UnusableAnswer("the answer repeats the instructions' priority legend, not the events")
    return replace(read, lines=kept, ignored=read.ignored + len(read.lines) - len(kept))


__all__ = ["TAGS", "Answer", "Span", "UnusableAnswer", "choose_span", "clip_span", "event_line", "observer_input",
           "read_observer_answer", "safe_boundaries"]
