"""The one confined writer: every file scribe writes, reads back or removes in the workspace on
the agent's or the person's behalf (write_file, edit_file, undo, a git undo's restored files)
goes through a `ConfinedRoot`, which resolves the path below its root without following a link
in any component, and refuses, in one line, what would leave it: a link on the way, `..`, an
absolute path outside, a component that is not a folder.

How: the parent folder is opened below the root with `openat2(RESOLVE_BENEATH |
RESOLVE_NO_SYMLINKS)` where the kernel has it (Linux 5.6; Python has no wrapper, so through
ctypes), else one component at a time with `O_NOFOLLOW | O_DIRECTORY` relative to the folder
before (which is also how missing folders are made: `mkdir` in the folder just opened, then
opened the same way). The file itself is then opened, created, renamed over or unlinked
relative to that folder's descriptor, never by path: a link swapped in meanwhile is met as a
link, and refused, or replaced as an entry (never written through).

Writes are atomic as workspace/writers/atomic.py's are: a temporary file beside the target, flushed,
renamed over it; the old file's mode and owner are kept; a FIFO, socket or device is refused
before anything opens it."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scribe.workspace.writers.atomic import (
    TEMPORARY_SUFFIX,
    WriteFailed,
    WriteRefused,
    failure_line,
    fill,
)

_SYS_OPENAT2 = 437  # the same number on every architecture Linux added it for (5.6)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a link"))


class Outside(WriteRefused):
    """The path would leave the root (a link, `..`, an absolute path elsewhere); nothing was done."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


@functools.cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name, use_errno=True) if name else None


_openat2_works = True


def _openat2(root_fd: int, path: str) -> int | None:
    """The folder `path` below `root_fd`, opened with openat2; None where the kernel lacks it."""
    global _openat2_works
    libc = _libc()
    if not _openat2_works or libc is None:
        return None
    how = _OpenHow(_DIR_FLAGS, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = libc.syscall(_SYS_OPENAT2, root_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
    if fd >= 0:
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM):  # an old kernel, or a seccomp filter that forbids it
        _openat2_works = False
        return None
    raise OSError(err, os.strerror(err), path)


def kind_of(mode: int) -> str | None:
    """What an entry is when it is not a regular file ("a socket"), else None."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


@dataclass
class ConfinedWrite:
    """New content flushed beside its target in an open folder, not yet in place."""

    folder: int  # the parent folder's descriptor, owned by this write until commit or discard
    leaf: str
    temporary: str
    name: str
    existed: bool

    def commit(self) -> None:
        """Put the new content in place (one rename inside the folder) and make it durable."""
        try:
            os.replace(self.temporary, self.leaf, src_dir_fd=self.folder, dst_dir_fd=self.folder)
        except OSError as exc:
            self.discard()
            raise WriteFailed(failure_line(self.name, exc, self.existed)) from None
        try:
            os.fsync(self.folder)
        except OSError:
            pass  # the new content is in place; only its survival of a power cut is less certain
        self._close()

    def discard(self) -> None:
        if self.folder < 0:
            return
        try:
            os.unlink(self.temporary, dir_fd=self.folder)
        except FileNotFoundError:
            pass
        self._close()

    def _close(self) -> None:
        if self.folder >= 0:
            os.close(self.folder)
            self.folder = -1


class ConfinedRoot:
    """Files below one folder (the workspace, or a root `allowed_paths` adds), reached without
    following any link."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def relative(self, path: str | Path) -> str:
        """`path` (relative to the root, or absolute inside it) as a checked relative path;
        Outside when it names the root itself, climbs with `..`, or is elsewhere."""
        raw = PurePosixPath(os.fsdecode(path))
        if raw.is_absolute():
            inside = Path(raw)
            if not (inside == self.root or inside.is_relative_to(self.root)):
                raise Outside(f"{path} is outside {self.root}; scribe writes only inside it")
            raw = PurePosixPath(inside.relative_to(self.root).as_posix())
        parts = [p for p in raw.parts if p not in ("", ".")]
        if ".." in parts:
            raise Outside(f"{path} climbs out with '..'; scribe writes only inside {self.root}")
        if not parts:
            raise Outside(f"{path} names the folder {self.root} itself, not a file in it")
        return "/".join(parts)

    @contextmanager
    def folder(self, path: str | Path, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """The open parent folder of `path` and the name in it; Outside when a component is a
        link or not a folder, FileNotFoundError when one is missing (unless `create`)."""
        rel = self.relative(path)
        parent, _, leaf = rel.rpartition("/")
        fd = self._open_folder(parent, create, rel)
        try:
            yield fd, leaf
        finally:
            os.close(fd)

    def _open_folder(self, parent: str, create: bool, whole: str) -> int:
        root_fd = os.open(self.root, _DIR_FLAGS)
        if not parent:
            return root_fd
        try:
            try:
                fd = _openat2(root_fd, parent)
            except OSError as exc:
                if exc.errno == errno.ENOENT and create:
                    fd = None  # the walk below makes what is missing
                elif exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR, errno.ENOENT):
                    fd = self._walk(root_fd, parent, False, whole)  # to say which component
                else:
                    raise
            if fd is None:
                fd = self._walk(root_fd, parent, create, whole)
            return fd
        finally:
            os.close(root_fd)

    def _walk(self, root_fd: int, parent: str, create: bool, whole: str) -> int:
        fd = os.dup(root_fd)
        done: list[str] = []
        try:
            for part in parent.split("/"):
                done.append(part)
                try:
                    nxt = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass  # made meanwhile; opened below like any other
                    nxt = self._open_step(fd, part, "/".join(done), whole)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise Outside(self._why(fd, part, "/".join(done), whole)) from None
                    raise
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _open_step(self, fd: int, part: str, done: str, whole: str) -> int:
        try:
            return os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise Outside(self._why(fd, part, done, whole)) from None
            raise

    def _why(self, fd: int, part: str, done: str, whole: str) -> str:
        try:
            mode = os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            try:
                target = os.readlink(part, dir_fd=fd)
            except OSError:
                target = "?"
            return f"{done} is a link (to {target}); scribe never follows a link here, so {whole} is refused"
        return f"{done} is not a folder, so {whole} cannot be written"

    # -- what the tools and undo do --------------------------------------------------------------

    def read(self, path: str | Path) -> bytes:
        """The content of the regular file at `path`; Outside for a link (there or on the way)."""
        with self.folder(path) as (fd, leaf):
            try:
                handle = os.open(leaf, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Outside(f"{self.relative(path)} is a link; scribe never reads through a link here") from None
                raise
            try:
                kind = kind_of(os.fstat(handle).st_mode)
                if kind is not None:
                    raise WriteRefused(f"{self.relative(path)} is {kind}, not a regular file")
                chunks = []
                while chunk := os.read(handle, 1 << 20):
                    chunks.append(chunk)
                return b"".join(chunks)
            finally:
                os.close(handle)

    def exists(self, path: str | Path) -> bool:
        try:
            with self.folder(path) as (fd, leaf):
                os.stat(leaf, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def check(self, path: str | Path) -> None:
        """Outside unless every folder on the way to `path` is a real folder below the root (a
        missing one is fine: nothing leads out through it)."""
        try:
            with self.folder(path):
                pass
        except FileNotFoundError:
            pass

    def prepare(self, path: str | Path, data: bytes, *, name: str | None = None, executable: bool | None = None,
                make_parents: bool = False) -> ConfinedWrite:
        """Write `data` beside `path` and flush it, not yet in place. With `executable` None an
        existing file's mode and owner are kept (a new file gets the umask's default); True or
        False sets the mode as git checkout would. `make_parents`: missing folders are made."""
        name = name or self.relative(path)
        with self.folder(path, create=make_parents) as (fd, leaf):
            existing = _lstat(fd, leaf)
            if existing is not None:
                kind = kind_of(existing.st_mode)
                if kind is not None:
                    raise (Outside if kind == "a link" else WriteRefused)(
                        f"{name} is {kind}, not a regular file; only regular files are written")
            temporary = f".{leaf}.{secrets.token_hex(4)}{TEMPORARY_SUFFIX}"
            create_mode = 0o777 if executable else 0o666
            try:
                handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                 create_mode, dir_fd=fd)
            except OSError as exc:
                raise WriteFailed(failure_line(name, exc, existing is not None)) from None
            try:
                fill(handle, data, existing if executable is None else None)
            except OSError as exc:
                os.unlink(temporary, dir_fd=fd)
                raise WriteFailed(failure_line(name, exc, existing is not None)) from None
            return ConfinedWrite(os.dup(fd), leaf, temporary, name, existing is not None)

    def write(self, path: str | Path, data: bytes, *, name: str | None = None, make_parents: bool = False) -> None:
        """Replace (or create) the file at `path` with `data` in one step, or leave it as it was."""
        self.prepare(path, data, name=name, make_parents=make_parents).commit()

    def remove(self, path: str | Path, *, prune: bool = False) -> None:
        """Delete the file (or link, as an entry) at `path`; `prune`: then the folders that held
        only it, up to the root. A missing file is no error."""
        rel = self.relative(path)
        with self.folder(rel) as (fd, leaf):
            existing = _lstat(fd, leaf)
            if existing is not None and stat.S_ISDIR(existing.st_mode):
                raise WriteRefused(f"{rel} is a directory; only files are removed")
            if existing is not None:
                os.unlink(leaf, dir_fd=fd)
        parent = rel.rpartition("/")[0]
        while prune and parent:
            try:
                with self.folder(parent) as (fd, name):
                    os.rmdir(name, dir_fd=fd)
            except OSError:
                return  # not empty (or gone): the folders above hold more too
            parent = parent.rpartition("/")[0]


def _lstat(fd: int, leaf: str) -> os.stat_result | None:
    try:
        return os.stat(leaf, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
