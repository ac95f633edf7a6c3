"""Small byte/text helpers the file tools share: hashing, telling binary from text, and
rendering sizes and error lines the way the model reads them."""

from __future__ import annotations

import hashlib
from pathlib import Path

# How much of a file decides "binary or text": enough to see a header, cheap to read.
SNIFF_BYTES = 8192
# Above this share of undecodable bytes a NUL-free file is treated as binary, not text with
# a few bad bytes (latin-1 prose stays well below it; random data sits around 50%+).
_MAX_BAD_RATIO = 0.3

# Magic numbers of formats worth naming; anything else binary is just "binary data".
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"PK\x05\x06", "ZIP archive"),
    (b"\x1f\x8b", "gzip data"),
    (b"BZh", "bzip2 data"),
    (b"\xfd7zXZ\x00", "xz data"),
    (b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O universal binary"),
    (b"MZ", "Windows executable"),
    (b"\x00asm", "WebAssembly module"),
    (b"SQLite format 3\x00", "SQLite database"),
)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def binary_kind(head: bytes) -> str | None:
    """Name what kind of binary `head` (a file's first bytes) starts, or None for text."""
    for magic, name in _MAGIC:
        # "MZ" and "BZh" are short enough to start ordinary text; only trust them with a NUL.
        if head.startswith(magic) and (len(magic) > 3 or b"\x00" in head):
            return name
    if head[257:262] == b"ustar":
        return "tar archive"
    if b"\x00" in head:
        return "binary data"
    if head:
        # A multi-byte character cut at the sniff boundary costs at most a few bad bytes.
        text = head.decode("utf-8", errors="replace")
        bad = text.count("\ufffd")
        if bad / len(head) > _MAX_BAD_RATIO:
            return "binary data, not UTF-8 text"
    return None


def human_bytes(count: int) -> str:
    """Render a byte count as '512 bytes', '12.3 KB', '98.2 MB' (decimal units)."""
    if count < 1000:
        return f"{count} byte" if count == 1 else f"{count} bytes"
    value = float(count)
    for unit in ("KB", "MB", "GB", "TB"):
        value /= 1000
        if value < 1000 or unit == "TB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 line`, `2 lines`; `many` for a word whose plural is not word + s (entry, entries)."""
    return f"{count} {word}" if count == 1 else f"{count} {many or word + 's'}"


def one_line(message: str, limit: int = 500) -> str:
    """Collapse a message to one line: errors are read by the model as a single line."""
    flat = " ".join(message.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line without a newline still counts."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
