"""Reading the record for the REPL: log events as one line each, earlier exchanges, the
workspace's sessions, and what changed in git since a session began. Read-only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from scribe.agent.session.session import store_for
from scribe.log.events import (
    AssistantEvent,
    Event,
    InterruptEvent,
    UserEvent,
)


def _first(text: str, width: int = 90) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def as_typed(text: str, command: object) -> str:
    """A message as the person typed it: the slash command that made it (`/review src/a.py`,
    `/init`), which the log records beside the text it expanded to (`command`), or its text."""
    if not isinstance(command, dict) or not isinstance(command.get("name"), str):
        return text
    arguments = command.get("arguments")
    return f"/{command['name']}" + (f" {arguments}" if isinstance(arguments, str) and arguments else "")


def last_exchanges(events: Sequence[Event], count: int = 3) -> list[tuple[str, str]]:
    """(what was asked, as the person typed it, and the last text answered to it) for the last
    `count` user turns; a turn that was cancelled says so. Reads back from the end only as far
    as those turns go (a long session's older events stay in its file)."""
    start, found = len(events), 0
    for position, event in zip(range(len(events) - 1, -1, -1), reversed(events), strict=True):
        if isinstance(event, UserEvent):
            start, found = position, found + 1
            if found == count:
                break
    pairs: list[list[str]] = []
    for event in events[start:]:
        if isinstance(event, UserEvent):
            pairs.append([as_typed(event.text, event.extra.get("command")), ""])
        elif isinstance(event, AssistantEvent) and pairs:
            text = "".join(b.get("text", "") for b in event.content if b.get("type") == "text")
            if text.strip():
                pairs[-1][1] = text
        elif isinstance(event, InterruptEvent) and pairs:
            pairs[-1][1] = (pairs[-1][1] + "\n\n*(interrupted)*").strip()
    return [(asked, answered) for asked, answered in pairs[-count:]]


@dataclass(frozen=True)
class ResumeEntry:
    """One line of /resume's list (`scribe log list` has its own: context/stats.SessionSummary)."""

    id: str
    turns: int
    first_prompt: str
    active: str  # when its log was last written, local time to the minute


@dataclass(frozen=True)
class SessionList:
    shown: list[ResumeEntry]  # the latest, newest last
    more: int  # older sessions with something in them, not shown


def session_summaries(workspace: Path, limit: int = 10, keep: str | None = None) -> SessionList:
    """The latest sessions of the workspace that hold more than their header (and `keep`, the
    current one, even if empty). Counts `user` lines without parsing whole logs into events:
    listing must stay fast however long the sessions are."""
    shown: list[ResumeEntry] = []
    more = 0
    for s in reversed(store_for(workspace).sessions(workspace)):
        if s.id != keep and _header_only(s.path):
            continue
        if len(shown) >= limit:
            more += 1
            continue
        shown.append(_summary(s.id, s.path))
    return SessionList(shown[::-1], more)


def _header_only(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            fh.readline()
            return not fh.read(1)
    except OSError:
        return False  # listed, and opening it will say what is wrong


def _summary(session_id: str, path: Path) -> ResumeEntry:
    turns, first = 0, ""
    with path.open("rb") as fh:
        for raw in fh:
            if b'"type":"user"' not in raw:
                continue
            turns += 1
            if not first:
                try:
                    record = json.loads(raw)
                    first = _first(as_typed(str(record.get("text", "")), record.get("command")), 70)
                except json.JSONDecodeError:
                    first = "(unreadable line)"
    active = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%d %H:%M")
    return ResumeEntry(session_id, turns, first, active)
