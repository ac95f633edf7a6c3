"""Following a log that another process is appending to: complete lines only, as they land.

A line counts once its newline is written. Bytes after the last newline wait until the line
completes; if they vanish instead (a resuming writer cuts a torn tail off and appends after
it), the fragment is dropped and reading goes on from what the file now holds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path


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
