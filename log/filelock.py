"""A lock on a file of scribe's state folder, for one writer at a time of something shared: the
project notes (two curations), HEAD (two commits or undos). A `flock`: it goes with the process,
so a crash leaves nothing stale; the file is never opened through a link (a repository can
commit one where scribe keeps its state), and it is made private to you. The wait is bounded."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from scribe.log.private import make_private_folder, open_private

POLL_S = 0.05


class LockWaitedTooLong(Exception):
    """Another process held the lock past the wait; nothing was done."""


@contextmanager
def held(path: Path, wait_s: float, holder: str) -> Iterator[None]:
    """Hold the lock at `path` for the block, waiting up to `wait_s` for it; `holder` names
    who else would hold it, for the error that says it was held too long."""
    make_private_folder(path.parent)
    fd = open_private(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockWaitedTooLong(f"{holder} held {path.name} for more than {wait_s:g} s") from None
                time.sleep(POLL_S)
        yield
    finally:
        os.close(fd)  # the lock goes with it
