"""Reading the record for the REPL: log events as one line each, earlier exchanges, the
workspace's sessions, and what changed in git since a session began. Read-only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scribe.agent.session import store_for
from scribe.memory.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    InterruptEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UnknownEvent,
    UsageEvent,
    UserEvent,
)


def _first(text: str, width: int = 90) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def event_line(e: Event) -> str:
    """`seq type detail`: enough to recognise an event; `scribe log show` has the whole of it."""
    kind = e.type_name if isinstance(e, UnknownEvent) else e.type
    detail = ""
    if isinstance(e, SessionEvent):
        detail = f"{e.id} model {e.model}"
    elif isinstance(e, UserEvent):
        detail = _first(e.text)
    elif isinstance(e, AssistantEvent):
        parts = [_first(b.get("text", ""), 60) for b in e.content if b.get("type") == "text"]
        parts += [f"[{b.get('name')}]" for b in e.content if b.get("type") == "tool_use"]
        detail = " ".join(p for p in parts if p)
    elif isinstance(e, ToolResultEvent):
        detail = f"{e.tool} {'error' if e.is_error else 'ok'}: {_first(e.output, 70)}"
    elif isinstance(e, UsageEvent):
        detail = (f"{e.purpose} in {e.input} read {e.cache_read} write {e.cache_write} "
                  f"out {e.output} ({e.latency_ms} ms)")
    elif isinstance(e, InterruptEvent):
        detail = f"{len(e.tool_use_ids)} tool call(s) closed: {e.reason}"
    elif isinstance(e, ErrorEvent):
        detail = f"{e.kind}: {_first(e.message, 80)}"
    elif isinstance(e, ObservationEvent):
        detail = f"events {e.seq_from}–{e.seq_to}, {e.tokens} tokens"
    elif isinstance(e, ReflectionEvent):
        detail = f"replaces {len(e.supersedes)} chunks, {e.tokens} tokens"
    return f"{e.seq:>5}  {kind:<12} {detail}"


def last_exchanges(events: Sequence[Event], count: int = 3) -> list[tuple[str, str]]:
    """(what was asked, the last text answered to it) for the last `count` user turns; a turn
    that was cancelled says so."""
    pairs: list[list[str]] = []
    for event in events:
        if isinstance(event, UserEvent):
            pairs.append([event.text, ""])
        elif isinstance(event, AssistantEvent) and pairs:
            text = "".join(b.get("text", "") for b in event.content if b.get("type") == "text")
            if text.strip():
                pairs[-1][1] = text
        elif isinstance(event, InterruptEvent) and pairs:
            pairs[-1][1] = (pairs[-1][1] + "\n\n*(interrupted)*").strip()
    return [(asked, answered) for asked, answered in pairs[-count:]]


@dataclass(frozen=True)
class SessionSummary:
    id: str
    turns: int
    first_prompt: str


def session_summaries(workspace: Path, limit: int = 10) -> list[SessionSummary]:
    """The latest sessions of the workspace, newest last. Counts `user` lines without parsing
    whole logs into events: listing must stay fast however long the sessions are."""
    found = []
    for s in store_for(workspace).sessions(workspace)[-limit:]:
        turns, first = 0, ""
        with s.path.open("rb") as fh:
            for raw in fh:
                if b'"type":"user"' not in raw:
                    continue
                turns += 1
                if not first:
                    try:
                        first = _first(str(json.loads(raw).get("text", "")), 70)
                    except json.JSONDecodeError:
                        first = "(unreadable line)"
        found.append(SessionSummary(s.id, turns, first))
    return found
