"""scribe's own files are private to the person: what it creates in its state folder (session
logs, locks, checkpoints, notes, the REPL history, MCP servers' stderr) and the trust file are
0600 and their folders 0700, whatever the umask (transcripts hold whatever a session read).

An existing file or folder keeps the mode its owner gave it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def make_private_folder(path: Path) -> None:
    """Create `path` and every missing parent as 0700. Raises OSError as mkdir does."""
    missing = []
    for folder in (path, *path.parents):
        if folder.is_dir():
            break
        missing.append(folder)
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue  # made meanwhile by another process, which made it as it chose
        os.chmod(folder, FOLDER_MODE)  # mkdir's mode passes through the umask; this does not


def open_private(path: Path, flags: int) -> int:
    """os.open with a new file created 0600 (the umask can only take bits away from it)."""
    return os.open(path, flags | os.O_CLOEXEC, FILE_MODE)


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text` in one rename: a reader sees the old file or the new, never
    half. Not fsynced (callers keep caches and notes, which the log can rebuild). Raises OSError."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
