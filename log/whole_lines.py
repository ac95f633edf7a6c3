"""The whole lines of a log file, read in chunks from a byte offset, so that reopening a long
session never holds the file in memory. Optionally feeds a hash with exactly the bytes of the
whole lines it reads (a torn last line is set aside, unhashed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

CHUNK = 1 << 20


class WholeLines:
    """`for offset, line in WholeLines(fh, start)`: each whole line from `start` (a line boundary)
    to `stop` (one too) or the end of the file, without its newline. Afterwards `end` is the
    offset just past the last whole line and `torn` the bytes after it (no newline)."""

    def __init__(self, fh: BinaryIO, start: int = 0, stop: int | None = None, hasher: Any = None) -> None:
        self.fh, self.start, self.stop, self.hasher = fh, start, stop, hasher
        self.end = start
        self.torn = b""

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        self.fh.seek(self.start)
        position = self.start  # of the first byte of `carry`
        carry = b""
        while True:
            want = CHUNK if self.stop is None else min(CHUNK, self.stop - position - len(carry))
            data = self.fh.read(want) if want > 0 else b""
            if not data:
                break
            buffer = carry + data
            cut = buffer.rfind(b"\n") + 1
            if cut == 0:
                carry = buffer
                continue
            whole, carry = buffer[:cut], buffer[cut:]
            if self.hasher is not None:
                self.hasher.update(whole)
            offset = position
            for line in whole.split(b"\n")[:-1]:
                yield offset, line
                offset += len(line) + 1
            position += cut
            self.end = position
        self.torn = carry


def hash_prefix(fh: BinaryIO, size: int, hasher: Any) -> int:
    """Feed `hasher` the file's first `size` bytes; how many there were (fewer: the file is shorter)."""
    fh.seek(0)
    done = 0
    while done < size:
        data = fh.read(min(CHUNK, size - done))
        if not data:
            break
        hasher.update(data)
        done += len(data)
    return done


def lines_before(fh: BinaryIO, end: int) -> Iterator[bytes]:
    """The whole lines before `end` (just past a newline, or 0), last first, without their
    newlines, read backwards in chunks: the last lines of a huge log cost a read or two."""
    position = end - 1 if end > 0 else 0  # the last line's newline is not part of it
    carry = b""
    while position > 0:
        step = min(CHUNK, position)
        position -= step
        fh.seek(position)
        parts = (fh.read(step) + carry).split(b"\n")
        carry = parts[0]  # may begin before this chunk: completed by the next one back
        yield from reversed(parts[1:])
    if end > 0:
        yield carry


def complete_end_of(fh: BinaryIO) -> int:
    """The offset just past the file's last newline (0: none), found reading from its end."""
    position = fh.seek(0, 2)
    while position > 0:
        step = min(CHUNK, position)
        position -= step
        fh.seek(position)
        found = fh.read(step).rfind(b"\n")
        if found >= 0:
            return position + found + 1
    return 0
