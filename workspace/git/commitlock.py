"""scribe's own lock around moving HEAD: sessions in one workspace (several `scribe run
--auto-commit` at once, a REPL and a `scribe undo`) commit and undo one after another instead
of racing for git's ref locks. A `flock` on a file in the state folder, which commands cannot
see in the sandbox; it goes with the process, so a crashed session leaves nothing stale."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scribe.log.filelock import LockWaitedTooLong, held

__all__ = ["COMMIT_LOCK", "COMMIT_LOCK_WAIT_S", "LockWaitedTooLong", "commit_lock"]

COMMIT_LOCK = "commit.lock"  # the file's name in the state folder
COMMIT_LOCK_WAIT_S = 60.0


@contextmanager
def commit_lock(path: Path | None, wait_s: float = COMMIT_LOCK_WAIT_S) -> Iterator[None]:
    """Hold the lock at `path` (None: no lock) for the block; waits up to `wait_s`."""
    if path is None:
        yield
        return
    with held(path, wait_s, "another scribe session in this workspace"):
        yield
