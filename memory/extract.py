"""The model-free observation: when no model answer is usable (refused, prose, an error, or a
request already too large for the window), the oldest raw events become a short extractive
stub instead, so compression never depends on a model's obedience and a session can always go on.

The stub is taken from the events alone, deterministically: the person's words (clipped), the
file paths the tools touched, the commands run with their exit codes, and the errors, under a
line naming the seq range that `recall` reads back exactly. It is written in the canonical
observation form, so it is rendered like any other chunk, and its size is bounded (at most
`STUB_TOKENS`, and always well under what it replaces), so it always shrinks the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence

from scribe.context.tokens import estimate_text
from scribe.log.digest import RECENT, LogDigest
from scribe.log.events import EXTRACTIVE_MODEL as EXTRACTIVE_MODEL  # the stubs' model name, re-exported
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    InterruptEvent,
    ObservationEvent,
    ToolResultEvent,
    UserEvent,
)
from scribe.log.images import image_refs

from .observations import NEXT_LABEL, TASK_LABEL

STUB_TOKENS = 400
# A stub takes at most this share of what it replaces: it must shrink the prompt, by a margin.
STUB_SHARE = 0.5
USER_CHARS = 240
COMMAND_CHARS = 160
ERROR_CHARS = 160
PATHS_SHOWN = 12
# The errors of the work itself; memory's own failures (a refused answer) say nothing of it.
AGENT_ERROR_KINDS = ("api", "tool")


# After this many unusable observer answers in a row, the model is rested: the next needed
# compressions are extractive without asking it, and it is asked again after MODEL_REST of them.
MODEL_TRIES = 2
MODEL_REST = 3
assert max(MODEL_TRIES, MODEL_REST) <= RECENT, "the digest keeps enough of each streak"


def model_resting_now(digest: LogDigest, failed_kind: str = "observe_backoff",
                      made: type[Event] = ObservationEvent) -> bool:
    """True when the side call's model has failed MODEL_TRIES times in a row (errors of
    `failed_kind` since its last kept `made` event) and fewer than MODEL_REST extractive ones
    have followed the last failure: a model that cannot answer is not asked at every turn, yet
    is asked again now and then. From the log's digest, so a restarted process rests it alike,
    and no event is read back (a long session may have no reflection at all to stop at)."""
    failures, stubs_since = digest.streak(failed_kind, made)
    return failures >= MODEL_TRIES and stubs_since < MODEL_REST


class NothingToExtract(ValueError):
    """The span is too small for any stub to be smaller than it."""


def extractive_stub(events: Sequence[Event], span_tokens: int, *, limit: int = STUB_TOKENS) -> str:
    """The stub for `events` (one observable span, oldest first), within min(limit, a share of
    `span_tokens`) estimated tokens; NothingToExtract when even its first line would not fit."""
    first, last = events[0].seq, events[-1].seq
    budget = min(limit, int(span_tokens * STUB_SHARE))
    head = f"🟢 Model-free summary of seq {first}-{last} (no observer answer was usable); recall seq {first}-{last} " \
           "for the exact events"
    users, paths, commands, errors = _facts(events)
    last_words = users[-1][1] if users else None
    tail = [f"{TASK_LABEL}: {_clip(last_words, 120)}" if last_words else f"{TASK_LABEL}: continue the session",
            f"{NEXT_LABEL}: continue from the newest messages; recall seq {first}-{last} if a detail is needed"]
    fixed = estimate_text("\n".join([head, *tail]))
    if fixed > budget:
        raise NothingToExtract(f"seq {first}-{last} ({span_tokens} tokens) is too small for a summary")
    body = [f"🔴 User (seq {seq}): {_clip(text, USER_CHARS)}" for seq, text in users]
    if paths:
        shown = ", ".join(paths[:PATHS_SHOWN]) + (f" and {len(paths) - PATHS_SHOWN} more" if len(paths) > PATHS_SHOWN else "")
        body.append(f"🟡 Files touched: {shown}")
    body += [f"🟡 Ran (seq {seq}): {_clip(command, COMMAND_CHARS)} -> {status}" for seq, command, status in commands]
    body += [f"🟡 Error (seq {seq}): {_clip(text, ERROR_CHARS)}" for seq, text in errors]
    kept: list[str] = []
    used = fixed
    for line in body:  # in priority order: the person's words first, then files, commands, errors
        size = estimate_text(line) + 1
        if used + size > budget:
            kept.append(f"🟢 {len(body) - len(kept)} more facts left out; recall seq {first}-{last}")
            if used + estimate_text(kept[-1]) + 1 > budget:
                kept.pop()
            break
        kept.append(line)
        used += size
    return "\n".join([head, *kept, *tail])


def extractive_reflection(texts: Sequence[str], covers: tuple[int, int], tokens: int, *,
                          limit: int = STUB_TOKENS) -> str:
    """The model-free stand-in for a reflection of the observation chunks `texts` (oldest
    first; they cover seq `covers`, about `tokens` in all): their must-keep lines, newest first
    while they fit in min(limit, a share of `tokens`), and the newest task lines, under a line
    naming the seq range to recall. NothingToExtract when even that line would not fit."""
    first, last = covers
    budget = min(limit, int(tokens * STUB_SHARE))
    head = f"🟢 Model-free condensation of the observations of seq {first}-{last}; recall seq {first}-{last} " \
           "for the exact events"
    lines = [line for text in texts for line in text.splitlines()]
    task = next((line for line in reversed(lines) if line.startswith(f"{TASK_LABEL}:")), None)
    step = next((line for line in reversed(lines) if line.startswith(f"{NEXT_LABEL}:")), None)
    tail = [line for line in (task, step) if line]
    used = estimate_text("\n".join([head, *tail]))
    if used > budget:
        raise NothingToExtract(f"the observations of seq {first}-{last} are too small to condense")
    kept: list[str] = []
    seen: set[str] = set()
    for line in reversed(lines):  # the newest must-keep lines are the likeliest to still hold
        if not line.startswith("🔴") or line in seen:
            continue
        clipped = _clip(line, USER_CHARS)
        if used + estimate_text(clipped) + 1 > budget:
            break
        seen.add(line)
        kept.insert(0, clipped)
        used += estimate_text(clipped) + 1
    return "\n".join([head, *kept, *tail])


def _facts(events: Sequence[Event]) -> tuple[list[tuple[int, str]], list[str], list[tuple[int, str, str]],
                                              list[tuple[int, str]]]:
    users: list[tuple[int, str]] = []
    paths: list[str] = []
    commands: list[tuple[int, str, str]] = []
    errors: list[tuple[int, str]] = []
    calls: dict[str, dict[str, object]] = {}
    for event in events:
        if isinstance(event, UserEvent) and event.text.strip():
            pictures = "".join(f" [attached image {ref.describe()}]" for ref in image_refs(event.images))
            users.append((event.seq, event.text + pictures))
        elif isinstance(event, AssistantEvent):
            for block in event.content:
                if block.get("type") != "tool_use":
                    continue
                given = block.get("input")
                args: dict[str, object] = given if isinstance(given, dict) else {}
                calls[str(block.get("id"))] = args
                path = args.get("path")
                if isinstance(path, str) and path and path not in paths:
                    paths.append(path)
        elif isinstance(event, ToolResultEvent):
            command = calls.get(event.tool_use_id, {}).get("command")
            if isinstance(command, str):
                status = f"exit {event.exit_code}" if event.exit_code is not None else (
                    "error" if event.is_error else "done")
                commands.append((event.seq, command, status))
            elif event.is_error:
                errors.append((event.seq, f"{event.tool}: {_first_line(event.output)}"))
        elif isinstance(event, FileChangeEvent) and event.path not in paths:
            paths.append(event.path)
        elif isinstance(event, ErrorEvent) and event.kind in AGENT_ERROR_KINDS:
            errors.append((event.seq, f"{event.kind}: {_first_line(event.message)}"))
        elif isinstance(event, InterruptEvent):
            errors.append((event.seq, f"interrupted: {event.reason}"))
    return users, paths, commands, errors


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "(no output)")


def _clip(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"
