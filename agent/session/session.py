"""A session: its log file, its events (the recent ones in memory), and the one writer that appends to it."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, TypeVar

from scribe.context.checkpoint import (
    checkpoint_path,
    make_checkpoint,
    save_checkpoint,
)
from scribe.context.render import current_model
from scribe.log.attachments import ImageStore
from scribe.log.chunks import ChunkIndex
from scribe.log.digest import LogDigest
from scribe.log.eventlog import EventLog
from scribe.log.events import (
    Event,
    SessionEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.images import ImageRef
from scribe.log.jsonl import LogProblem, LogWriter
from scribe.log.store import SessionStore
from scribe.model.client import CallResult
from scribe.model.window import ContextWindow, effective_window
from scribe.settings.files import state_dir
from scribe.settings.values import OBSERVER_AUTO, Settings, anthropic_url, observer_for
from scribe.workspace.images import PreparedImage

E = TypeVar("E", bound=Event)


class SessionLike(Protocol):
    """What compression reads of a session and appends to it: a Session, or a Draft of one that a
    thread works on off the main thread (draft.py)."""

    @property
    def id(self) -> str: ...
    @property
    def header(self) -> SessionEvent: ...
    @property
    def events(self) -> Sequence[Event]: ...
    @property
    def chunks(self) -> ChunkIndex: ...
    @property
    def digest(self) -> LogDigest: ...
    @property
    def images(self) -> ImageStore: ...
    def append(self, cls: type[E], **fields: Any) -> E: ...
    def record_call(self, result: CallResult, purpose: str, **extra: Any) -> UsageEvent: ...
    def sync(self) -> None: ...


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


def side_model(session: SessionLike, settings: Settings) -> str:
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


def session_window(session: SessionLike, configured: int) -> ContextWindow | None:
    """The window of the session's current model, from what its log has learned."""
    session.chunks.update(session.events)
    learned = session.chunks.window
    recorded = ContextWindow(learned.tokens, learned.source) if learned is not None else None
    return effective_window(current_model(session.events, session.chunks), configured, recorded,
                            learned.model if learned is not None else None)
