"""A session: its log file, the events read so far, and the one writer that appends to it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TypeVar

from scribe import __version__
from scribe.memory.events import (
    ErrorEvent,
    Event,
    InterruptEvent,
    SessionEvent,
    now_iso,
)
from scribe.memory.log import LogError, LogWriter, read_log
from scribe.memory.pairing import unanswered_tool_uses
from scribe.memory.render import ChunkIndex
from scribe.memory.store import SessionFile, SessionStore, exclude_from_git
from scribe.tools.git import git_state

from .config import Settings, state_dir
from .instructions import Environment, prompt_hash, read_project_texts, system_text

E = TypeVar("E", bound=Event)


@dataclass
class Session:
    id: str
    path: Path
    events: list[Event]
    writer: LogWriter
    # Problems the reader met when the session was reopened (torn line, bad lines).
    problems: list[str]
    # Observation chunks of this log, kept current as it grows (see ChunkIndex).
    chunks: ChunkIndex = field(default_factory=ChunkIndex)

    @property
    def header(self) -> SessionEvent:
        first = self.events[0]
        assert isinstance(first, SessionEvent)
        return first

    def append(self, cls: type[E], **fields: Any) -> E:
        event = self.writer.append(cls, **fields)
        self.events.append(event)
        return event

    def sync(self) -> None:
        self.writer.sync()

    def close(self) -> None:
        self.writer.close()


def store_for(workspace: Path) -> SessionStore:
    return SessionStore(state_dir(workspace))


def notes_path(workspace: Path) -> Path:
    return state_dir(workspace) / "notes.md"


def start_session(workspace: Path, settings: Settings, tool_definitions: list[dict[str, Any]],
                  mcp: list[dict[str, Any]] | None = None) -> Session:
    """`mcp`: the MCP servers as found at the start (agent/mcptools.pin); their tools are
    already among `tool_definitions`."""
    store = store_for(workspace)
    exclude_from_git(workspace, store.root)
    state = git_state(workspace)
    env = Environment(cwd=str(workspace), git_branch=state.branch, git_head=state.head, started=date.today())
    project = read_project_texts(workspace, notes_path(workspace))
    system = system_text(env, project)
    session_id = store.new_id()
    path = store.path_for(session_id)
    writer = LogWriter.create(path)
    session = Session(session_id, path, [], writer, [])
    session.append(
        SessionEvent,
        id=session_id,
        created=now_iso(),
        cwd=str(workspace),
        model=settings.model,
        scribe_version=__version__,
        system=system,
        tools=tool_definitions,
        prompt_hash=prompt_hash(system, tool_definitions),
        config=settings.recorded(),
        git_head=state.head,
        git_branch=state.branch,
        sources=[t.source() for t in project],
        mcp=mcp or [],
    )
    writer.sync()
    return session


def open_session(found: SessionFile) -> Session:
    """Reopen a session for appending. A tool call left without a result by a crash or a kill
    is closed with an `interrupt` event, so the log itself says what the next request shows."""
    read = read_log(found.path)
    if any(p.kind == "newer" for p in read.problems):
        raise LogError(f"session {found.id} was written by a newer scribe (a newer log format); "
                       "upgrade scribe to continue it")
    if not read.events or not isinstance(read.events[0], SessionEvent):
        raise LogError(f"{found.path} does not begin with a session event; it cannot be continued")
    writer = LogWriter.resume(found.path, read)
    problems = [f"line {p.line}: {p.message}" for p in read.problems]
    session = Session(found.id, found.path, read.events, writer, problems)
    if read.torn_tail:
        session.append(ErrorEvent, kind="internal", torn=read.torn_tail.decode("utf-8", errors="replace"),
                       message=f"recovered a torn last line ({len(read.torn_tail)} bytes) left by a stopped writer")
    dangling = unanswered_tool_uses(session.events)
    if dangling:
        session.append(InterruptEvent, tool_use_ids=dangling, reason="the session stopped before these tool calls finished")
        session.sync()
    return session
