"""scribe's own lock around moving HEAD: sessions in one workspace (several `scribe run
--auto-commit` at once, a REPL and a `scribe undo`) commit and undo one after another instead
of racing for git's ref locks. A `flock` on a file in the state folder, which commands cannot
see in the sandbox; it goes with the process, so a crashed session leaves nothing stale."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

COMMIT_LOCK = "commit.lock"  # the file's name in the state folder
COMMIT_LOCK_WAIT_S = 60.0
LOCK_POLL_S = 0.05


class LockWaitedTooLong(Exception):
    """Another session held the lock past the wait; nothing was done."""


@contextmanager
def commit_lock(path: Path | None, wait_s: float = COMMIT_LOCK_WAIT_S) -> Iterator[None]:
    """Hold the lock at `path` (None: no lock) for the block; waits up to `wait_s`."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockWaitedTooLong(f"another scribe session in this workspace held {path.name} for more "
                                            f"than {wait_s:g} s") from None
                time.sleep(LOCK_POLL_S)
        yield
    finally:
        os.close(fd)  # the lock goes with it
