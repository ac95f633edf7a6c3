"""A session: its log file, its events (the recent ones in memory), and the one writer that appends to it."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from scribe import __version__
from scribe.context.checkpoint import (
    NotASessionLog,
    checkpoint_path,
    make_checkpoint,
    reopen,
    save_checkpoint,
)
from scribe.context.chunks import ChunkIndex
from scribe.context.render import current_model
from scribe.log.attachments import ImageStore
from scribe.log.digest import LogDigest
from scribe.log.eventlog import EventLog
from scribe.log.events import (
    ErrorEvent,
    Event,
    InterruptEvent,
    SessionEvent,
    UsageEvent,
    UserEvent,
    now_iso,
)
from scribe.log.images import ImageRef
from scribe.log.jsonl import LogError, LogProblem, LogWriter, SessionLock
from scribe.log.open_calls import unanswered_tool_uses
from scribe.log.store import SessionFile, SessionStore, exclude_from_git
from scribe.model.client import CallResult
from scribe.model.window import ContextWindow, effective_window
from scribe.settings.files import state_dir
from scribe.settings.values import OBSERVER_AUTO, Settings, anthropic_url, observer_for
from scribe.workspace.bwrap import read_only
from scribe.workspace.git import git_state
from scribe.workspace.images import PreparedImage

from .instructions import Environment, prompt_hash, read_project_texts, system_text
from .unheld import condense_unheld, observe_unheld

E = TypeVar("E", bound=Event)


@dataclass
class Session:
    id: str
    path: Path
    # Every event, the recent ones in memory and the older ones read from the file on demand
    # (log/eventlog.py): use it as a Sequence; reach back only where it is needed.
    events: EventLog
    writer: LogWriter
    # Problems the reader met when the session was reopened (torn line, bad lines).
    problems: list[str]
    # Observation chunks of this log, kept current as it grows (see ChunkIndex).
    chunks: ChunkIndex = field(default_factory=ChunkIndex)
    # Worth telling the person when the session opens (a damaged newer session passed over).
    notices: list[str] = field(default_factory=list)
    # What the whole log says (files seen, usage, curation, commits), kept as it grows.
    digest: LogDigest = field(default_factory=LogDigest)
    # The lines of the file the reader skipped, for the checkpoint.
    skipped: list[LogProblem] = field(default_factory=list)
    # The log's size when its checkpoint was last written (-1: not yet by this process).
    _checkpointed: int = field(default=-1, init=False, repr=False)
    # Every model call, once something asked (`calls`), and how many events it has read for them.
    _calls: list[UsageEvent] = field(default_factory=list, init=False, repr=False)
    _calls_read: int = field(default=0, init=False, repr=False)
    # Told of each event as it is appended (telemetry follows a session this way); they must not raise.
    listeners: list[Callable[[Event], None]] = field(default_factory=list, repr=False)

    @property
    def header(self) -> SessionEvent:
        return self.events.header

    @cached_property
    def images(self) -> ImageStore:
        """The images attached to the session's messages, beside its log."""
        return ImageStore.for_log(self.path)

    def append(self, cls: type[E], **fields: Any) -> E:
        place = (self.writer.size, self.writer.lines + 1)
        event = self.writer.append(cls, **fields)
        self.events.append(event, place)
        self.digest.add(event)
        for listener in self.listeners:
            listener(event)
        return event

    def record_call(self, result: CallResult, purpose: str, **extra: Any) -> UsageEvent:
        """The usage of a model call, as the log keeps it (agent, observer, reflector, curator);
        `extra`: fields of its own (a side call's `side_call`)."""
        return self.append(UsageEvent, **usage_fields(result, purpose, **extra))

    def append_message(self, text: str, images: Sequence[PreparedImage] = (), **extra: Any) -> UserEvent:
        """A person's message: its images kept in the session's store first, so the log never
        names an image the store does not hold, then the user event (`extra`: fields of its own,
        the slash command that made it)."""
        refs = [ImageRef(image.name, self.images.put(image.data, image.media_type), image.media_type,
                         image.width, image.height, len(image.data)).record() for image in images]
        return self.append(UserEvent, text=text, images=refs, **extra)

    def calls(self) -> list[UsageEvent]:
        """Every model call of the session, oldest first (the REPL's figures): the log is streamed
        for them once, then only the events appended since are looked at."""
        if self._calls_read < self.events.start:  # the older events are in the file: stream them
            self._calls = [e for e in self.events if isinstance(e, UsageEvent)]
        else:
            self._calls += [e for e in self.events[self._calls_read:] if isinstance(e, UsageEvent)]
        self._calls_read = len(self.events)
        return self._calls

    def sync(self) -> None:
        """At a turn's end: durable on disk, and a checkpoint for the next reopen."""
        self.writer.sync()
        self.checkpoint()

    def close(self) -> None:
        if not self.writer.closed:
            self.checkpoint()
        self.writer.close()

    def checkpoint(self) -> None:
        """Write what a reopen needs beside the log (context/checkpoint.py). It is a cache: when it
        cannot be written (a full disk), the next reopen reads the log whole, and nothing else
        changes, so the failure is not the person's concern."""
        hasher = self.writer.hasher
        if hasher is None or self.writer.closed or self.writer.size == self._checkpointed:
            return
        made = make_checkpoint(self.events, self.chunks, self.digest, self.skipped, size=self.writer.size,
                               lines=self.writer.lines, fingerprint=hasher.hexdigest(),
                               last_seq=self.writer.next_seq - 1)
        if made is None:
            return
        try:
            save_checkpoint(checkpoint_path(self.path), made)
        except OSError:
            return  # a cache left as it was; see above
        self._checkpointed = self.writer.size


def usage_fields(result: CallResult, purpose: str, **extra: Any) -> dict[str, Any]:
    """The fields of the usage event that records a model call."""
    return {"purpose": purpose, "model": result.model, **result.tokens.counts(), "latency_ms": result.latency_ms,
            "message_id": result.message_id, "server": result.server, **extra}


def side_model(session: Session, settings: Settings) -> str:
    """The model the session's observer, reflector and curator calls ask for (settings/values.py
    `observer_for`). For `auto`, whether Anthropic's API answers is told by the base URL, else by
    the agent's last call: a call Anthropic answered through a proxy records no `server`."""
    if settings.observer_model != OBSERVER_AUTO:
        return settings.observer_model
    answers = anthropic_url(os.environ.get("ANTHROPIC_BASE_URL"))
    if not answers and session.digest.agent_calls:  # (none yet: no call to read back for)
        last = next((e for e in reversed(session.events) if isinstance(e, UsageEvent) and e.purpose == "agent"), None)
        answers = last is not None and last.server is None
    return observer_for(settings.observer_model, answers, current_model(session.events, session.chunks))


def store_for(workspace: Path) -> SessionStore:
    return SessionStore(state_dir(workspace))


def notes_path(workspace: Path) -> Path:
    return state_dir(workspace) / "notes.md"


def start_session(workspace: Path, settings: Settings, tool_definitions: list[dict[str, Any]],
                  mcp: list[dict[str, Any]] | None = None,
                  protection: dict[str, Any] | None = None) -> Session:
    """`mcp`: the MCP servers as found at the start (agent/mcptools.pin); their tools are
    already among `tool_definitions`."""
    store = store_for(workspace)
    state = git_state(workspace, read_only(settings.sandbox))
    exclude_from_git(workspace, store.root, state.exclude_dir)
    env = Environment(cwd=str(workspace), git_branch=state.branch, git_head=state.head, started=date.today())
    read = read_project_texts(workspace, notes_path(workspace))
    project = read.texts
    system = system_text(env, project)
    session_id = store.new_id()
    path = store.path_for(session_id)
    writer = LogWriter.create(path)
    header = writer.append(
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
        protection=protection or {},
    )
    session = Session(session_id, path, EventLog(header, [header], [(0, 1)]), writer, [], notices=list(read.refused))
    session.digest.add(header)
    writer.sync()
    return session


def open_session(found: SessionFile) -> Session:
    """Reopen a session for appending, from its checkpoint and the lines after it when the
    checkpoint still describes the log, else from the whole log (context/checkpoint.py). A tool
    call left without a result by a crash or a kill is closed with an `interrupt` event, so the
    log itself says what the next request shows."""
    # The lock first, then the read: a read made before taking it could miss lines another
    # writer appends meanwhile, and this one would then append after them with stale seqs.
    lock = SessionLock.acquire(found.path)
    try:
        try:
            log = reopen(found.path)
        except NotASessionLog as exc:
            raise LogError(str(exc)) from None
        except OSError as exc:
            raise LogError(f"cannot read {found.path}: {exc.strerror or exc}") from None
        if any(p.kind == "newer" for p in log.problems):
            raise LogError(f"session {found.id} was written by a newer scribe (a newer log format); "
                           "upgrade scribe to continue it")
        writer = LogWriter.after(found.path, last_seq=log.last_seq, size=log.size, torn=log.torn_tail, lock=lock,
                                 lines=log.lines, hasher=log.hasher)
    except BaseException:
        lock.release()
        raise
    problems = [f"line {p.line}: {p.message}" for p in log.problems]
    session = Session(found.id, found.path, log.events, writer, problems, chunks=log.chunks, digest=log.digest,
                      skipped=[p for p in log.problems if p.kind != "torn"])
    if log.torn_tail:
        session.append(ErrorEvent, kind="internal", torn=log.torn_tail.decode("utf-8", errors="replace"),
                       message=f"recovered a torn last line ({len(log.torn_tail)} bytes) left by a stopped writer")
    if log.unheld is not None:
        session.notices.append(observe_unheld(session, *log.unheld))
    if (condensed := condense_unheld(session)) is not None:
        session.notices.append(condensed)
    dangling = unanswered_tool_uses(session.events)
    if dangling:
        session.append(InterruptEvent, tool_use_ids=dangling, reason="the session stopped before these tool calls finished")
        session.sync()
    elif not log.from_checkpoint:
        session.checkpoint()  # read whole this time; the next reopen need not
    return session


def session_window(session: Session, configured: int) -> ContextWindow | None:
    """The window of the session's current model, from what its log has learned."""
    session.chunks.update(session.events)
    learned = session.chunks.window
    recorded = ContextWindow(learned.tokens, learned.source) if learned is not None else None
    return effective_window(current_model(session.events, session.chunks), configured, recorded,
                            learned.model if learned is not None else None)
