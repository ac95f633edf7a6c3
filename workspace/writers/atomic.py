"""Writing a file so that a failure never leaves half of it: the new content goes to a
temporary file in the same folder, is flushed to disk, and is renamed over the target in one
step. A full disk, a quota or a dying process leaves the old file whole. Files in the workspace
written for the agent or the person go through workspace/writers/confined.py, which does the same below
an open folder and never through a link; this path-based form is for files the person names
themselves (`scribe log html -o PAGE`), wherever they are.

What the old file had is kept: its permission bits, and its owner and group where this
process may set them. Two things a rename cannot keep: other hard links to the old file keep the old content, and
extended attributes and ACLs are not copied.

Anything that is not a regular file (a FIFO, a socket, a device) is refused before it is
opened: opening a FIFO for writing blocks until someone reads it."""

from __future__ import annotations

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

# The ending of the temporary file a write goes through before it is renamed over its target (the
# workspace watcher never reports one).
TEMPORARY_SUFFIX = ".scribe-tmp"

_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


class WriteRefused(Exception):
    """A write that will not be made, in words for whoever asked (a tool reads them as its
    error result)."""


class WriteFailed(WriteRefused):
    """The new content could not be written; the old file (if any) is unchanged."""


def special_kind(target: Path) -> str | None:
    """What `target` is when it exists and is not a regular file ("a socket"), else None.
    Looks with stat, never open."""
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return None
    for test, kind in _SPECIAL:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def refuse_special(target: Path, name: str) -> None:
    kind = special_kind(target)
    if kind is not None:
        raise WriteRefused(f"{name} is {kind}, not a regular file; only regular files are written")


@dataclass
class PendingWrite:
    """New content written and flushed beside its target, not yet in place."""

    target: Path
    temporary: Path
    name: str

    def commit(self) -> None:
        """Put the new content in place (one rename), and make the rename itself durable."""
        try:
            os.replace(self.temporary, self.target)
        except OSError as exc:
            self.discard()
            raise WriteFailed(failure_line(self.name, exc, self.target.exists())) from None
        _sync_folder(self.target.parent)

    def discard(self) -> None:
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass


def prepare(target: Path, data: bytes, name: str, *, executable: bool | None = None,
            mode: int | None = None) -> PendingWrite:
    """Write `data` to a temporary file beside `target` and flush it to disk. With `executable`
    None an existing target's mode and owner are kept (a new file gets the umask's default);
    True or False sets the mode as git checkout would (0777 or 0666, less the umask). `mode`
    sets exactly that mode, whatever the umask and the old file (0600 for a private file)."""
    refuse_special(target, name)
    existing = _stat(target)
    temporary = _temporary_path(target)
    create_mode = mode if mode is not None else 0o777 if executable else 0o666
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, create_mode)
    except OSError as exc:
        raise WriteFailed(failure_line(name, exc, existing is not None)) from None
    try:
        fill(fd, data, existing if executable is None else None, mode)
    except OSError as exc:
        os.unlink(temporary)
        raise WriteFailed(failure_line(name, exc, existing is not None)) from None
    return PendingWrite(target, temporary, name)


def fill(fd: int, data: bytes, kept: os.stat_result | None, mode: int | None = None) -> None:
    """Give a new temporary file its mode (exactly `mode`, else the mode and owner of the file
    it replaces, `kept`), write all of `data`, flush it to disk and close it. Raises OSError;
    the file is closed either way."""
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # the umask may only have taken bits away
        elif kept is not None:
            os.fchmod(fd, stat.S_IMODE(kept.st_mode))
            keep_owner(fd, kept)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(target: Path, data: bytes, name: str, *, mode: int | None = None) -> None:
    """Replace `target` with `data` in one step, or leave it as it was and say why."""
    prepare(target, data, name, mode=mode).commit()


def _stat(target: Path) -> os.stat_result | None:
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None


def _temporary_path(target: Path) -> Path:
    # Hidden, named after its target, and marked as scribe's, should a crash leave it behind.
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}")


def keep_owner(fd: int, existing: os.stat_result) -> None:
    if (existing.st_uid, existing.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.fchown(fd, existing.st_uid, existing.st_gid)
    except PermissionError:
        pass  # only root may give a file away; the file then belongs to whoever wrote it


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # a folder that cannot be opened for reading cannot be synced; the rename holds
    try:
        os.fsync(fd)
    except OSError:
        pass  # the new content is in place; only its survival of a power cut is less certain
    finally:
        os.close(fd)


def failure_line(name: str, exc: OSError, existed: bool) -> str:
    reason = (exc.strerror or str(exc)).lower()
    kept = "the file is unchanged" if existed else "nothing was written"
    return f"could not write {name}: {reason}; {kept}"
