"""Reading a text file as numbered lines in memory bounded by what is shown.

read_file streams the whole file once (it counts every line and hashes every byte) but holds at
most one piece of a line at a time: a 200 MB file on a single line costs a piece, not 200 MB of
bytes plus their decoded copy. A shown line keeps its first `max_line_chars` characters; the
rest is counted, not kept."""

from __future__ import annotations

import codecs
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

# The most bytes of one line held at once.
PIECE_BYTES = 1 << 16


@dataclass
class NumberedLines:
    shown: list[str] = field(default_factory=list)
    total: int = 0  # lines in the file, as an editor counts them
    crlf: bool = False  # a shown line ended in CRLF
    digest: str = ""  # sha256 of the whole file


def numbered_lines(target: Path, offset: int, limit: int, max_line_chars: int, max_chars: int) -> NumberedLines:
    """Lines `offset`.. (1-based), at most `limit` of them and about `max_chars` characters in
    all, formatted like `cat -n`; a line longer than `max_line_chars` is cut with a note."""
    result = NumberedLines()
    digest = hashlib.sha256()
    chars = 0
    with target.open("rb") as handle:
        while piece := handle.readline(PIECE_BYTES):
            digest.update(piece)
            result.total += 1
            wanted = result.total >= offset and len(result.shown) < limit and chars < max_chars
            line = _Line(max_line_chars) if wanted else None
            while True:
                ends = piece.endswith(b"\n")
                if line is not None:
                    line.add(piece, last=ends)
                if ends:
                    break
                piece = handle.readline(PIECE_BYTES)
                if not piece:  # the last line has no newline
                    if line is not None:
                        line.add(b"", last=True)
                    break
                digest.update(piece)
            if line is not None:
                result.crlf = result.crlf or line.crlf
                entry = f"{result.total:>6}\t{line.text()}"
                result.shown.append(entry)
                chars += len(entry) + 1
    result.digest = digest.hexdigest()
    return result


class _Line:
    """One shown line arriving in pieces: its first characters kept, the rest counted. The line
    ending (every trailing CR and LF, as `bytes.rstrip(b"\\r\\n")` strips them) is not part of it,
    so CRs at the end of a piece wait to see whether the line ends after them."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.kept: list[str] = []
        self.kept_chars = 0
        self.more = 0
        self.held = b""
        self.crlf = False

    def add(self, piece: bytes, *, last: bool) -> None:
        data = self.held + piece
        if last:
            self.crlf = data.endswith(b"\r\n")
            body, self.held = data.rstrip(b"\r\n"), b""
        else:
            body = data.rstrip(b"\r")
            self.held = data[len(body):]
            if len(self.held) > PIECE_BYTES:  # a run of CRs that long is content, not an ending
                body, self.held = data, b""
        self._take(self.decoder.decode(body, final=last))

    def _take(self, text: str) -> None:
        room = self.max_chars + 1 - self.kept_chars  # one over, to know the line is longer
        if room > 0:
            self.kept.append(text[:room])
            self.kept_chars += min(len(text), room)
            text = text[room:]
        self.more += len(text)

    def text(self) -> str:
        line = "".join(self.kept)
        if len(line) > self.max_chars or self.more:
            cut = len(line) - self.max_chars + self.more
            return f"{line[:self.max_chars]}… [line cut: {cut} more chars]"
        return line
