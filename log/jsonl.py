"""The session log on disk: one writer that appends, any number of readers.

A line is acknowledged once `append` returns: it has been written and flushed to the OS, and the
log's seal (log/seal.py) vouches for it, so a crash of scribe itself loses nothing acknowledged;
`sync` (at turn ends) makes both durable against a crash of the machine. The writer holds an
exclusive lock for its whole life, so a second process on the same session is refused instead
of interleaving lines. A writer appends only to a log whose seal holds (or one the person adopts).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from scribe.log.codec import EventFormatError, NewerFormatError, from_record, to_record
from scribe.log.events import Event, now_iso
from scribe.log.private import make_private_folder, open_private
from scribe.log.seal import Sealer, SealError, authenticate, user_key
from scribe.log.whole_lines import WholeLines, complete_end_of, hash_prefix

E = TypeVar("E", bound=Event)


class LogError(Exception):
    """The log cannot be opened, locked or read."""


# How long a process refused the lock waits for the holder's pid, which it writes just after
# taking the lock, to name it.
PID_WAIT_S = 0.1


class SessionLocked(LogError):
    pass


class LogWriteError(LogError):
    """The file system refused to write the log or its folder: full, read-only, not permitted."""


class NotSealed(LogError):
    """The log's seal does not vouch for it (log/seal.py): it is read and shown, never acted on."""

    def __init__(self, session: str, why: str) -> None:
        self.session, self.why = session, why
        super().__init__(f"session {session} was not sealed by scribe on this account ({why}); it can be read "
                         f"(`scribe log show {session}`) but is not continued, undone or curated from; "
                         f"`scribe log adopt {session}` if you know where it came from")


@dataclass(frozen=True)
class LogProblem:
    line: int  # 1-based line number in the file
    message: str
    kind: str = "invalid"  # invalid | torn | newer


@dataclass
class LogRead:
    events: list[Event] = field(default_factory=list)
    problems: list[LogProblem] = field(default_factory=list)
    # The file ended without a newline: a writer died mid-line. The fragment is not an event.
    torn_tail: bytes = b""
    size: int = 0
    # The highest seq on any line, skipped ones included: the next line follows it, so seqs keep
    # rising by one per line even past a line the reader could not use.
    last_seq: int = -1


def encode(event: Event) -> bytes:
    return json.dumps(to_record(event), ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def read_log(path: Path) -> LogRead:
    """Read every event. Malformed lines are reported, not fatal; a torn last line is set aside."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    result = LogRead(size=len(data))
    body, sep, tail = data.rpartition(b"\n")
    if tail:
        result.torn_tail = tail
        result.problems.append(torn_problem(body.count(b"\n") + (2 if sep else 1)))
    if not sep:
        return result
    for number, raw in enumerate(body.split(b"\n"), start=1):
        event = read_line(result, number, raw)
        if event is not None:
            result.events.append(event)
    return result


def stream_log(path: Path, into: LogRead) -> Iterator[Event]:
    """`read_log` one event at a time, never holding the file or its events: `into` gets the
    problems (a torn last line first, as `read_log` puts it), the size, the torn tail and the
    last seq, but not the events."""
    try:
        with path.open("rb") as fh:
            lines = WholeLines(fh)
            number = 0
            for _, raw in lines:
                number += 1
                event = read_line(into, number, raw)
                if event is not None:
                    yield event
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    into.size = lines.end + len(lines.torn)
    if lines.torn:
        into.torn_tail = lines.torn
        into.problems.insert(0, torn_problem(number + 1))


def torn_problem(line: int) -> LogProblem:
    return LogProblem(line, "torn last line (a writer stopped mid-line); skipped", "torn")


def read_line(into: LogRead, number: int, raw: bytes) -> Event | None:
    """One whole line (without its newline) as an event, or None: a line that is blank, not JSON,
    or not an event is skipped, and noted in `into.problems` unless blank. `into.last_seq`
    follows every line's seq, skipped ones too. The caller keeps the event."""
    if not raw.strip():
        return None
    try:
        record: Any = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        into.problems.append(LogProblem(number, "not valid JSON; skipped"))
        return None
    try:
        event = from_record(record)
    except NewerFormatError as exc:
        into.problems.append(LogProblem(number, str(exc), "newer"))
    except EventFormatError as exc:
        into.problems.append(LogProblem(number, f"{exc}; skipped"))
    else:
        into.last_seq = max(into.last_seq, event.seq)
        return event
    seq = record.get("seq") if isinstance(record, dict) else None
    if isinstance(seq, int) and not isinstance(seq, bool):
        into.last_seq = max(into.last_seq, seq)
    return None


def read_first_record(path: Path) -> dict[str, Any] | None:
    """The first line only: listing sessions must not read whole logs."""
    try:
        with path.open("rb") as fh:
            line = fh.readline()
        record = json.loads(line)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def new_event(cls: type[E], seq: int, fields: dict[str, Any]) -> E:
    """The event of type `cls` to append as `seq`, stamped now; fields its class does not know
    are kept as its extra fields (written like the rest)."""
    fields = dict(fields)
    extra = fields.pop("extra", None) or {}
    known = {k: v for k, v in fields.items() if k in cls.__dataclass_fields__}
    extra.update({k: v for k, v in fields.items() if k not in cls.__dataclass_fields__})
    return cls(seq=seq, ts=now_iso(), extra=extra, **known)


class LogWriter:
    """The single appender of one session log.

    Writes go straight to the file descriptor (no buffer of ours): a line is acknowledged when
    the kernel has taken all of it. If the file system refuses part of a line (a full disk),
    the file is cut back to the last whole line and the append raises LogWriteError, so the
    log holds exactly the acknowledged lines; a later append may succeed once there is room."""

    def __init__(self, path: Path, *, next_seq: int, lock: SessionLock | None = None) -> None:
        self.path = path
        self.next_seq = next_seq
        # Whole lines in the file, and a sha256 of all its bytes when known (a new log, or one
        # reopened through context/checkpoint.py): what a checkpoint of it records.
        self.lines = 0
        self.hasher: Any = None
        # The sha256 the seal is made from: `hasher` itself when that is known, else its own.
        self._chain: Any = None
        self._sealer: Sealer | None = None
        self._broken = False
        session = path.stem
        try:
            make_private_folder(path.parent)
        except OSError as exc:
            raise LogWriteError(f"cannot write session {session} ({path.parent}): {exc.strerror}") from None
        self._lock = lock or SessionLock.acquire(path)
        try:
            self._fd: int | None = open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError as exc:
            self._lock.release()
            raise LogWriteError(f"cannot write session {session} ({path}): {exc.strerror}") from None
        self.size = os.fstat(self._fd).st_size  # bytes of whole, acknowledged lines

    @classmethod
    def create(cls, path: Path) -> LogWriter:
        if path.exists():
            raise LogError(f"{path} already exists")
        writer = cls(path, next_seq=0)
        writer.hasher = writer._chain = hashlib.sha256()
        writer._start_sealing()
        return writer

    @classmethod
    def resume(cls, path: Path, read: LogRead, lock: SessionLock | None = None) -> LogWriter:
        """Reopen for appending after `read`, made while holding `lock` (open_session takes the
        lock before reading). Without one, the lock is taken now and the file must still be the
        size `read` saw: lines another writer appended in between would otherwise be followed
        by lines with stale seqs. A torn tail (never acknowledged: its line was not finished) is
        cut off so the file is whole lines again; the caller records the fragment."""
        return cls.after(path, last_seq=read.last_seq, size=read.size - len(read.torn_tail), torn=read.torn_tail,
                         lock=lock)

    @classmethod
    def after(cls, path: Path, *, last_seq: int, size: int, torn: bytes, lock: SessionLock | None = None,
              lines: int = 0, hasher: Any = None) -> LogWriter:
        """Reopen for appending after a read that saw `size` bytes of whole lines (`lines` of
        them, hashed by `hasher` if given: else they are hashed now) and the `torn` bytes after
        them; see `resume`. Raises NotSealed, taking nothing, when the log's seal does not vouch
        for those bytes: appending would seal what scribe did not write."""
        writer = cls(path, next_seq=last_seq + 1, lock=lock)
        try:
            if writer.size != size + len(torn):
                raise LogError(f"{path} changed while it was being read ({size + len(torn)} bytes, now "
                               f"{writer.size}); another process wrote to it")
            chain = hasher
            if chain is None:
                chain = hashlib.sha256()
                with path.open("rb") as fh:
                    hash_prefix(fh, size, chain)
            try:
                verdict = authenticate(path, size, chain)
            except SealError as exc:
                raise LogWriteError(str(exc)) from None
            if not verdict.ok:
                raise NotSealed(path.stem, verdict.why)
            if torn:
                writer._cut_to(size)
            writer.lines, writer.hasher, writer._chain = lines, hasher, chain
            writer._start_sealing()
        except BaseException:
            writer.close()
            raise
        return writer

    def _start_sealing(self) -> None:
        try:
            self._sealer = Sealer(self.path, user_key())
            self._sealer.first(self.size, self._chain)
        except SealError as exc:
            self.close()
            raise LogWriteError(f"cannot write session {self.path.stem}: {exc}") from None

    def append(self, cls: type[E], **fields: Any) -> E:
        event = new_event(cls, self.next_seq, fields)
        self._write(encode(event))
        self.next_seq += 1
        return event

    def _write(self, line: bytes) -> None:
        fd = self._open_fd()
        chain = self._chain.copy() if self._chain is not None else None
        if chain is not None:
            chain.update(line)
        view = memoryview(line)
        written = 0
        try:
            while written < len(line):
                written += os.write(fd, view[written:])
        except OSError as exc:
            if written:
                try:
                    self._cut_to(self.size)
                except LogWriteError:
                    # The part line stays: the next open cuts it off as a torn last line, and
                    # this writer must not append after it.
                    self._broken = True
            raise LogWriteError(f"cannot write the session log {self.path}: {exc.strerror}; "
                                "every line written before this one is kept") from None
        if self._sealer is not None:
            try:
                self._sealer.seal(self.size + len(line), chain)
            except SealError as exc:
                # Unsealed, the line would make the whole log unauthenticated: it is taken back.
                self._cut_to(self.size)
                raise LogWriteError(f"{exc}; the line was not kept, every line before it is") from None
        self.size += len(line)
        self.lines += 1
        if self.hasher is not None and self.hasher is self._chain:
            self.hasher = chain
        elif self.hasher is not None:
            self.hasher.update(line)
        self._chain = chain

    def _cut_to(self, size: int) -> None:
        try:
            os.ftruncate(self._open_fd(), size)
        except OSError as exc:
            raise LogWriteError(f"cannot write the session log {self.path}: {exc.strerror}") from None
        self.size = size

    def _open_fd(self) -> int:
        if self._fd is None:
            raise LogError(f"the writer of {self.path} is closed")
        if self._broken:
            raise LogWriteError(f"cannot write the session log {self.path}: it ends in part of a line "
                                "that could not be cut off; continue the session to repair it")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd is None

    def sync(self) -> None:
        """Durable against a crash of the machine, not only of scribe (at turn ends): the log,
        then its seal."""
        try:
            os.fsync(self._open_fd())
        except OSError as exc:
            raise LogWriteError(f"cannot write the session log {self.path}: {exc.strerror}") from None
        if self._sealer is not None:
            try:
                self._sealer.sync()
            except SealError as exc:
                raise LogWriteError(str(exc)) from None

    def close(self) -> None:
        if self._fd is None:
            return
        try:
            if not self._broken:
                self.sync()
        finally:
            os.close(self._fd)
            self._fd = None
            if self._sealer is not None:
                self._sealer.close()
            self._lock.release()

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def adopt_log(path: Path) -> int:
    """Seal a log as it is now, whole lines only, at the person's word (`scribe log adopt`): from
    then on scribe acts on it as on its own. Under the session's lock; the log itself is not
    changed. Returns the bytes sealed."""
    if path.is_symlink():
        raise LogError(f"{path} is a symbolic link: scribe seals only a log in its own place (copy the log there)")
    lock = SessionLock.acquire(path)
    try:
        with path.open("rb") as fh:
            size = complete_end_of(fh)
            hasher = hashlib.sha256()
            hash_prefix(fh, size, hasher)
        sealer = Sealer(path, user_key())
        try:
            sealer.first(size, hasher)
            sealer.sync()
        finally:
            sealer.close()
    except SealError as exc:
        raise LogWriteError(str(exc)) from None
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        lock.release()
    return size


class SessionLock:
    """The exclusive right to append to one session, held from before its log is read until the
    writer closes. An advisory `flock` on `<id>.lock`: the kernel drops it when the process ends,
    however it ends, so a crash never leaves a session locked."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, log_path: Path) -> SessionLock:
        lock_path = log_path.with_suffix(".lock")
        try:
            # Never through a link: a repository can ship `<id>.lock` as one, and the lock file
            # is cut and written (the pid) before the log's seal is looked at.
            fd = open_private(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise LogWriteError(f"cannot write session {lock_path.stem}: {lock_path} is a symbolic link "
                                    f"(to {os.readlink(lock_path)}); scribe never follows one there") from None
            raise LogWriteError(f"cannot write session {lock_path.stem} ({lock_path}): {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # The holder writes its pid just after locking: a moment to write it is waited for.
            deadline = time.monotonic() + PID_WAIT_S
            while not (holder := os.pread(fd, 32, 0).decode(errors="replace").strip()).isdigit():
                if time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            os.close(fd)
            who = f"process {holder}" if holder.isdigit() else "another process"
            raise SessionLocked(
                f"session {lock_path.stem} is being written by {who}; "
                "wait for it to finish or start a new session"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
        except OSError as exc:
            os.close(fd)
            raise LogWriteError(f"cannot write session {lock_path.stem} ({lock_path}): {exc.strerror}") from None
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @staticmethod
    def holders(log_paths: Iterable[Path]) -> dict[Path, int]:
        """The logs among `log_paths` that a process is writing now (holds the lock of), with its
        pid. The lock is never taken to find out: a writer starting meanwhile would be refused.
        Where the kernel lists its locks (/proc/locks) they are looked up there; elsewhere a
        lock counts as held while the process whose pid it holds lives."""
        listed = _kernel_flocks()
        held: dict[Path, int] = {}
        for log_path in log_paths:
            lock_path = log_path.with_suffix(".lock")
            try:
                info = lock_path.stat()
                if listed is not None:
                    pid = listed.get((os.major(info.st_dev), os.minor(info.st_dev), info.st_ino))
                else:
                    pid = _living(lock_path.read_text(encoding="ascii", errors="replace").strip())
            except OSError:
                continue  # no lock file: never written by a LogWriter, or gone
            if pid is not None:
                held[log_path] = pid
        return held


def _kernel_flocks() -> dict[tuple[int, int, int], int] | None:
    """The flock() locks held on this machine, (device major, minor, inode) -> pid, as Linux lists
    them in /proc/locks (`1: FLOCK  ADVISORY  WRITE 4242 fe:00:123456 0 EOF`); None elsewhere."""
    try:
        text = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    held: dict[tuple[int, int, int], int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK":  # a waiter's line has "->" here
            continue
        try:
            major, minor, inode = parts[5].split(":")
            held[(int(major, 16), int(minor, 16), int(inode))] = int(parts[4])
        except ValueError:
            continue
    return held


def _living(pid_text: str) -> int | None:
    """The pid a lock file holds, if that process is alive."""
    if not pid_text.isdigit() or int(pid_text) <= 0:
        return None
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # alive, another user's
    return int(pid_text)
