"""Where session logs live, and how a session is found by id, prefix or recency.

Logs sit in `<state>/sessions/<id>.jsonl`, where the state folder is `<workspace>/.scribe`
unless SCRIBE_HOME moves it. Finding a session reads only the first line of each log (what it
is) and the end of it (when it was last written), never a whole log.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scribe.log.codec import EventFormatError, from_record
from scribe.log.events import SessionEvent
from scribe.log.jsonl import LogError, SessionLock, read_first_record
from scribe.log.seal import unsealed


class SessionNotFound(LogError):
    pass


@dataclass(frozen=True)
class SessionFile:
    id: str
    path: Path
    cwd: str | None
    created: str | None
    # The ts of the last event after the session event: when something last happened in it.
    # None when it holds only its session event (as /clear or a failed start leaves it).
    activity: str | None = None
    # Why it cannot be continued (its first line is not a readable session event), or None.
    damaged: str | None = None
    # When the file was last written, for ordering a log whose lines say nothing readable.
    mtime: float = 0.0
    # The session whose task call started it (a sub-agent's), or None.
    parent: str | None = None

    @property
    def empty(self) -> bool:
        """Nothing happened in it: a readable session event and nothing after."""
        return self.activity is None and self.damaged is None

    @property
    def moment(self) -> float:
        """When it was last written: its last event, else its start, else the file's mtime."""
        for ts in (self.activity, self.created):
            if (when := _epoch(ts)) is not None:
                return when
        return self.mtime


@dataclass(frozen=True)
class Continuation:
    """The session `--continue` opens, and the newer ones it passed over because they are damaged."""

    found: SessionFile
    skipped: list[SessionFile]


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.sessions_dir = root / "sessions"

    def new_id(self) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return f"{stamp}-{secrets.token_hex(3)}"

    def path_for(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.jsonl"

    def sessions(self, cwd: Path | None = None) -> list[SessionFile]:
        """All sessions, oldest first; with `cwd`, those started in that workspace, and those
        whose log is too damaged to say where they were started (they may be this one's).

        Ordered by the creation time recorded in each log (milliseconds), then by id: ids only
        have seconds, and two sessions can start within one."""
        if not self.sessions_dir.is_dir():
            return []
        found = [describe(Path(where)) for _, where in self.log_files()]
        found.sort(key=lambda s: (s.created or "", s.id))
        if cwd is not None:
            found = [s for s in found if s.cwd == str(cwd) or (s.cwd is None and s.damaged)]
        return found

    def log_files(self) -> Iterator[tuple[str, str]]:
        """Each session log in the folder (`*.jsonl`, no hidden names), as its id and its path as
        text: over ten thousand logs, pathlib's own objects cost more than the stats a listing needs."""
        with os.scandir(self.sessions_dir) as entries:
            for entry in entries:
                if entry.name.endswith(".jsonl") and not entry.name.startswith("."):
                    yield entry.name[: -len(".jsonl")], entry.path

    def latest(self, cwd: Path | None = None, *, showing: Callable[[SessionFile], bool] | None = None) -> SessionFile:
        """The session written last, damaged or not. With `showing` (what `scribe log` shows by
        default): the last written that `showing` accepts, else the last in which anything
        happened, else the last. Opening the REPL and leaving it makes a session of its session
        event alone, written after the one worth showing."""
        sessions = self.sessions(cwd)
        if not sessions:
            raise SessionNotFound(f"no sessions yet in {self.sessions_dir}")
        ranked = sorted(sessions, key=lambda s: (s.moment, s.created or "", s.id), reverse=True)
        if showing is None:
            return ranked[0]
        return next((s for s in ranked if showing(s)), None) or next((s for s in ranked if not s.empty), ranked[0])

    def being_written(self, cwd: Path | None = None) -> tuple[SessionFile, int] | None:
        """The session a process is writing now (the holder of its lock) and that process's pid:
        of several, the one written last. None when no scribe writes one of these sessions."""
        sessions = self.sessions(cwd)
        held = SessionLock.holders(s.path for s in sessions)
        live = [s for s in sessions if s.path in held]
        if not live:
            return None
        found = max(live, key=lambda s: (s.moment, s.created or "", s.id))
        return found, held[found.path]

    def to_continue(self, cwd: Path | None = None) -> Continuation:
        """The session with the latest activity that can be continued (`-c`). One that holds only
        its session event is not activity: it is chosen only when no other session has any.
        Damaged sessions, and those without a seal of the current form (log/seal.py: not written
        by scribe on this account, or by an older scribe), are passed over, and named, when they
        are newer than the one chosen. Whether a seal holds is checked when the chosen one is opened."""
        ranked = sorted(self.sessions(cwd), key=lambda s: (not s.empty, s.moment, s.created or "", s.id), reverse=True)
        skipped: list[SessionFile] = []
        passed_over = False
        for session in ranked:
            if session.damaged is None and (why := unsealed(session.path)) is not None:
                passed_over = True
                session = replace(session, damaged=f"{why} (not written by scribe on this account, or by an "
                                                   f"older scribe; `scribe log adopt {session.id}` if you know "
                                                   "where it came from)")
            if session.damaged is None:
                return Continuation(session, skipped)
            skipped.append(session)
        if skipped:
            why = "; ".join(f"{s.id}: {s.damaged}" for s in skipped[:3])
            raise SessionNotFound(f"no session to continue in {self.sessions_dir}: every log is damaged"
                                  f"{' or unsealed' if passed_over else ''} ({why})")
        raise SessionNotFound(f"no sessions yet in {self.sessions_dir}")

    def find(self, part: str, cwd: Path | None = None) -> SessionFile:
        """A session by its id or any part of it that names one session: the sessions whose id
        starts with `part`, else those whose id holds it anywhere (every id starts with its date,
        so `033145`, the time, or `9a3656`, the end, is enough). A part that several sessions'
        ids hold names none: the error lists them."""
        exact = self.path_for(part)
        if exact.is_file():
            return describe(exact)
        sessions = list(self.sessions(cwd))
        matches = [s for s in sessions if s.id.startswith(part)] or [s for s in sessions if part in s.id]
        if not matches:
            raise SessionNotFound(f"no session matches '{part}'")
        if len(matches) > 1:
            shown = ", ".join(s.id for s in matches[:5]) + (", ..." if len(matches) > 5 else "")
            raise SessionNotFound(f"'{part}' matches {len(matches)} sessions ({shown}); give more of the id")
        return matches[0]


def describe(path: Path) -> SessionFile:
    """What a log says about itself from its first line and its end, without reading it whole."""
    first = read_first_record(path)
    record = first or {}
    created, cwd = record.get("created"), record.get("cwd")
    try:
        mtime = path.stat().st_mtime
    except OSError:
        mtime = 0.0
    parent = record.get("parent")
    parent_id = parent.get("session") if isinstance(parent, dict) else None
    return SessionFile(path.stem, path, cwd if isinstance(cwd, str) else None,
                       created if isinstance(created, str) else None,
                       activity=last_activity(path), damaged=header_problem(first), mtime=mtime,
                       parent=parent_id if isinstance(parent_id, str) else None)


def header_problem(first: dict[str, Any] | None) -> str | None:
    """Why a log's first line is not a session event it can be continued from, or None."""
    if first is None:
        return "its first line is not a JSON object"
    try:
        event = from_record(first)
    except EventFormatError as exc:
        return f"its first line is unreadable ({exc})"
    if not isinstance(event, SessionEvent):
        return f"its first line is a {first.get('type')} event, not the session event"
    return None


# How the writer starts every line (log/codec.to_record keeps this key order): enough to
# read when a line was written without parsing a line that may hold a megabyte of output.
_LINE_START = re.compile(rb'\{"v":\d+,"seq":\d+,"ts":"([^"\\]+)","type":"([^"\\]+)"')
_TAIL_CHUNK = 64 * 1024
_LINES_LOOKED_AT = 32


# What memory's housekeeping appends (a compression, a curation: agent/finishing/ makes them after
# a run, and the curation of a session may come after later sessions): not the session's activity,
# or `scribe run -c` would continue the session curated last instead of the one worked in last.
_HOUSEKEEPING_TYPES = (b"notes", b"observation", b"reflection")
_HOUSEKEEPING_PURPOSES = (b'"purpose":"observer"', b'"purpose":"reflector"', b'"purpose":"curator"')


def last_activity(path: Path) -> str | None:
    """The ts of the last whole line after the session event, read from the end of the file,
    memory's housekeeping passed over while there is work before it among the lines looked at.
    Lines that cannot be read are passed over (a torn last line, a damaged one); None when the
    log holds only its session event, or nothing readable near its end."""
    housekeeping: str | None = None
    try:
        with path.open("rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            for line in _last_lines(fh, end):
                found = _LINE_START.match(line)
                if found is not None:
                    ts, kind = found.group(1).decode(errors="replace"), found.group(2)
                else:
                    try:
                        record = json.loads(line)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        continue
                    if not isinstance(record, dict) or not isinstance(record.get("ts"), str):
                        continue
                    ts, kind = record["ts"], str(record.get("type")).encode()
                if kind == b"session":
                    return housekeeping
                if kind in _HOUSEKEEPING_TYPES or any(p in line for p in _HOUSEKEEPING_PURPOSES):
                    housekeeping = housekeeping or ts
                    continue
                return ts
    except OSError:
        return None
    return housekeeping


def _last_lines(fh: Any, end: int) -> Iterator[bytes]:
    """The file's whole lines, last first (at most _LINES_LOOKED_AT, without their newline),
    read backwards in chunks: a line is found however long it is, and a short one costs one
    small read. Bytes after the last newline are a torn line and are not yielded."""
    position = end  # the buffer holds the file's bytes from `position` to `end`
    buffer = b""

    def read_back() -> int:
        """Prepend the chunk before the buffer; how many bytes (0 at the start of the file)."""
        nonlocal position, buffer
        step = min(_TAIL_CHUNK, position)
        if step:
            position -= step
            fh.seek(position)
            buffer = fh.read(step) + buffer
        return step

    while (limit := buffer.rfind(b"\n") + 1) == 0:  # just past the last whole line's newline
        if not read_back():
            return
    for _ in range(_LINES_LOOKED_AT):
        while (start := buffer.rfind(b"\n", 0, limit - 1) + 1) == 0 and (grown := read_back()):
            limit += grown
        line = buffer[start:limit - 1]
        if line.strip():
            yield line
        if start == 0:
            return
        limit = start


def _epoch(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        moment = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def exclude_from_git(workspace: Path, state_dir: Path, git_dir: Path | None = None) -> None:
    """Keep the state folder out of git through the repository's `info/exclude`, never a tracked
    file: in `git_dir` (workspace/git/repository.py's `exclude_dir`: the folder a linked worktree shares
    with its repository), else in the workspace's `.git` folder."""
    git_dir = git_dir or workspace / ".git"
    # Never through a link: a `.git` (or its info/) that leads elsewhere is not this workspace's to edit.
    if not git_dir.is_dir() or any(p.is_symlink() for p in (git_dir, git_dir / "info", git_dir / "info" / "exclude")):
        return
    try:
        rel = state_dir.resolve().relative_to(workspace.resolve())
    except ValueError:
        return  # state lives outside the workspace; nothing to hide
    pattern = f"/{rel.as_posix()}/"
    exclude = git_dir / "info" / "exclude"
    existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if pattern in existing.splitlines():
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    exclude.write_text(existing + prefix + pattern + "\n", encoding="utf-8")
