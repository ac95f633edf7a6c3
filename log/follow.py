"""Following a log that another process is appending to: complete lines only, as they land;
and following a workspace, from one session to the next started in it.

A line counts once its newline is written. Bytes after the last newline wait until the line
completes; if they vanish instead (a resuming writer cuts a torn tail off and appends after
it), the fragment is dropped and reading goes on from what the file now holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from scribe.log.jsonl import read_first_record
from scribe.log.store import SessionFile, SessionStore, describe


def complete_end(data: bytes) -> int:
    """Offset just past the last newline of `data` (0 when there is none)."""
    return data.rfind(b"\n") + 1


class LineFollower:
    def __init__(self, path: Path, offset: int = 0) -> None:
        self.path = path
        self.offset = offset  # bytes consumed as complete lines
        self.partial = b""  # bytes after them, waiting for their newline
        self._size = -1

    def read(self) -> list[bytes]:
        """Complete lines appended since the last call (without their newlines)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if size == self._size and not self.partial:
            return []
        self._size = size
        if size < self.offset:  # the file was cut below what we consumed: start over at its end
            self.offset, self.partial = size, b""
            return []
        with self.path.open("rb") as fh:
            fh.seek(self.offset)
            data = fh.read(size - self.offset)
        # Reading from the last newline each time (not from the end of the fragment) means a
        # fragment that was cut off and written over is simply read again as it now is.
        end = complete_end(data)
        lines = data[:end].split(b"\n")[:-1] if end else []
        self.offset += end
        self.partial = data[end:]
        return lines


def follow(path: Path, offset: int, *, poll_s: float = 0.1,
           sleep: Callable[[float], None] = time.sleep) -> Iterator[list[bytes]]:
    """Batches of complete new lines, forever; the caller stops iterating (or is interrupted)."""
    follower = LineFollower(path, offset)
    while True:
        lines = follower.read()
        if lines:
            yield lines
        else:
            sleep(poll_s)


@dataclass(frozen=True)
class Switched:
    """Following moved on to a session started later in the workspace; its lines come next."""

    found: SessionFile


class NewSessions:
    """Sessions started in one workspace after this was made. The state folder is listed by name
    (nothing is read of the logs already there); a new log is read once its first line is whole."""

    def __init__(self, store: SessionStore, cwd: Path) -> None:
        self.store, self.cwd = store, str(cwd)
        self.known = set(self._names())

    def _names(self) -> Iterator[str]:
        if self.store.sessions_dir.is_dir():
            yield from (name for name, _ in self.store.log_files())

    def arrived(self) -> list[SessionFile]:
        """The sessions of the workspace that have appeared since the last call, oldest first."""
        found = []
        for name, where in (list(self.store.log_files()) if self.store.sessions_dir.is_dir() else []):
            if name in self.known or read_first_record(Path(where)) is None:
                continue  # seen, or its session event not yet whole: looked at again next time
            self.known.add(name)
            session = describe(Path(where))
            if session.cwd == self.cwd:
                found.append(session)
        return sorted(found, key=lambda s: (s.created or "", s.id))


def follow_workspace(arrivals: NewSessions, found: SessionFile | None, offset: int, *,
                     poll_s: float = 0.1, look_s: float = 1.0, sleep: Callable[[float], None] = time.sleep,
                     clock: Callable[[], float] = time.monotonic) -> Iterator[list[bytes] | Switched]:
    """`follow` of `found` (from `offset`), until a session of the workspace `arrivals` watches
    is started (made before `found` was chosen, so none started meanwhile is missed): then what
    `found` gained meanwhile, a Switched, and that session's lines from its first; forever.
    Every `look_s` seconds the state folder is looked at for new sessions. With `found` None,
    only waiting for the first."""
    follower = LineFollower(found.path, offset) if found is not None else None
    look_at = clock() + look_s
    while True:
        lines = follower.read() if follower is not None else []
        if lines:
            yield lines
            continue
        if clock() >= look_at:
            look_at = clock() + look_s
            started = arrivals.arrived()
            if started:
                rest = follower.read() if follower is not None else []
                if rest:
                    yield rest
                yield Switched(started[-1])
                follower = LineFollower(started[-1].path)
                continue
        sleep(poll_s)
