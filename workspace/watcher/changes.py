"""The watcher's vocabulary and its debouncing, without any file system machinery: a settled
`FileChange`, the `ChangeSource` the agent loop drains at safe points, and `PendingChanges`, which
collects raw events per path until the path has been quiet long enough to count as one change."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

HASH_LIMIT = 64 * 1024 * 1024  # larger files are not hashed (hash None)


@dataclass(frozen=True)
class FileChange:
    """One settled change, ready to become a `file_change` event (same fields)."""

    path: str
    kind: str  # created | modified | deleted | moved | many
    hash: str | None = None
    stale: bool = False
    dest: str | None = None
    during_command: bool = False
    count: int = 0

    def fields(self) -> dict[str, Any]:
        return asdict(self)


class ChangeSource(Protocol):
    """What the agent loop needs from a watcher (tests pass a fake)."""

    def start(self) -> str | None:
        """Begin watching (idempotent). None when watching, else one line saying why not."""
        ...

    def drain(self, seen: Mapping[str, str]) -> list[FileChange]:
        """Settled changes not made by the agent's file tools, each reported once."""
        ...

    def take_failure(self) -> str | None:
        """An error met while watching since the last call, once; None when all went well."""
        ...

    def command_running(self) -> AbstractContextManager[None]:
        """Wraps the agent's own command: what changes meanwhile is its doing."""
        ...

    def own_writes(self, hashes: Mapping[str, str | None]) -> None:
        """Files scribe itself just changed outside the file tools (an undo restoring them):
        path -> the hash it left, None for a file it removed. Not outside changes."""
        ...

    def stop(self) -> None: ...


@dataclass
class Pending:
    """What happened to one path since it was last drained."""

    existed: bool | None  # before the first event: from that event's kind; None = cannot tell
    last: float  # clock of the latest event
    during_command: bool = False
    moved_to: str | None = None  # renamed away to this path
    moved_from: str | None = None  # renamed here from this path


class PendingChanges:
    """Coalesces raw events per path. Thread-safe: watchdog notes, the agent loop takes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._paths: dict[str, Pending] = {}
        self.gone_dirs: dict[str, bool] = {}  # folders deleted or moved away whole -> during a command

    def note(self, kind: str, path: str, dest: str | None = None, *, during_command: bool = False) -> None:
        """kind: created | modified | deleted | moved (then `dest`) | dir_gone."""
        now = self.clock()
        with self._lock:
            if kind == "dir_gone":
                self.gone_dirs[path] = self.gone_dirs.get(path, False) or during_command
                return
            first = {"created": False, "modified": True, "deleted": True, "moved": True}[kind]
            entry = self._touch(path, first, now, during_command)
            if kind == "moved" and dest is not None:
                entry.moved_to = dest
                target = self._touch(dest, None, now, during_command)
                target.moved_from = path

    def _touch(self, path: str, existed: bool | None, now: float, during_command: bool) -> Pending:
        entry = self._paths.get(path)
        if entry is None:
            entry = self._paths[path] = Pending(existed, now)
        entry.last = now
        entry.during_command = entry.during_command or during_command
        return entry

    def __bool__(self) -> bool:
        return bool(self._paths) or bool(self.gone_dirs)

    def take_settled(self, quiet_s: float) -> tuple[dict[str, Pending], dict[str, bool]]:
        """Entries quiet for `quiet_s` (a rename's two ends only together), and gone folders."""
        with self._lock:
            if not self._paths and not self.gone_dirs:
                return {}, {}
            cutoff = self.clock() - quiet_s
            taken: dict[str, Pending] = {}
            for path, entry in self._paths.items():
                partners = [p for p in (entry.moved_to, entry.moved_from) if p in self._paths]
                if entry.last <= cutoff and all(self._paths[p].last <= cutoff for p in partners):
                    taken[path] = entry
            for path in taken:
                del self._paths[path]
            gone, self.gone_dirs = self.gone_dirs, {}
            return taken, gone


def file_hash(path: Path) -> str | None:
    try:
        if path.stat().st_size > HASH_LIMIT:
            return None
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None
