"""Which logs scribe itself wrote: a session log is sealed as it is written, and only a log whose
seal holds drives an action (continuing it, undo, rewind, curating the notes from it).

The seal is an HMAC (SHA-256) under a key of the person's own, made once, kept outside every
workspace (`$XDG_STATE_HOME/scribe/log.key`, else `~/.local/state/scribe/log.key`, 0600) and never
written into a log or a prompt. What it authenticates is the sha256 of the log's bytes up to a
line boundary, the hash the writer keeps as it appends anyway (log/jsonl.py) and the one a reopen
computes to check its checkpoint (context/checkpoint.py): sealing a line costs one HMAC of 32
bytes and one 100-byte write in place, and authenticating a reopened log costs nothing more than
the reopen already did. The hash is a running one, so the seal of an append-only log is chained:
each new seal vouches for every byte before it.

The seal lives beside the log, `<id>.seal`, as one fixed-width line written in place after each
append (and fsynced with the log at turn ends):

    scribe-seal 1 <offset, 20 digits> <hmac, 64 hex digits>

What the seal does not cover is never trusted: lines after its offset (appended by something that
does not hold the key, or by a writer killed in the microseconds between a line and its seal)
make the log unauthenticated as a whole, and so does a log with no seal (written before scribe
sealed its logs, or not by this person's scribe: a log committed to a repository). A torn last
line (no newline) is not a line: the reopen cuts it off, as always. `scribe log adopt ID` seals a
log the person vouches for.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.log.private import make_private_folder, open_private
from scribe.log.whole_lines import complete_end_of, hash_prefix

KEY_FILE = "log.key"
KEY_BYTES = 32
SEAL_SUFFIX = ".seal"
_MAGIC = "scribe-seal 1"
_RECORD_LEN = len(f"{_MAGIC} {0:020d} {'0' * 64}\n")
# Set before the HMAC's input: a tag made for anything else never passes for a seal.
_DOMAIN = b"scribe session log seal v1\0"


class SealError(OSError):
    """The key or the seal cannot be read or written (the message says which, and where)."""


def key_path() -> Path:
    """Where the person's key is: their state folder, outside every workspace."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "scribe" / KEY_FILE


_keys: dict[Path, bytes] = {}


def user_key() -> bytes:
    """The person's key, made on first use (0600, in a 0700 folder). Raises SealError."""
    path = key_path()
    known = _keys.get(path)
    if known is not None:
        return known
    try:
        key = _read_key(path)
    except FileNotFoundError:
        key = _make_key(path)
    _keys[path] = key
    return key


def _read_key(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SealError(f"cannot read the log key {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        data = os.read(fd, 4 * KEY_BYTES)
    finally:
        os.close(fd)
    text = data.decode("ascii", errors="replace").strip()
    if not stat.S_ISREG(info.st_mode) or len(text) != 2 * KEY_BYTES:
        raise SealError(f"the log key {path} is not one scribe made (64 hex digits); move it away and "
                        "scribe makes a new one (logs sealed with the old one then need `scribe log adopt`)")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise SealError(f"the log key {path} is not one scribe made (64 hex digits)") from None


def _make_key(path: Path) -> bytes:
    """A new key, put in place whole and only if none is there (another scribe may race us)."""
    try:
        make_private_folder(path.parent)
        temporary = path.with_name(f".{KEY_FILE}.{secrets.token_hex(4)}.tmp")
        fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES).hex().encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)  # fails if another process made one first: that one is the key
        except FileExistsError:
            pass
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as exc:
        raise SealError(f"cannot make the log key in {path.parent}: {exc.strerror or exc}") from None
    return _read_key(path)


def tag(key: bytes, offset: int, digest: bytes) -> str:
    """The HMAC of a log whose first `offset` bytes hash (sha256) to `digest`."""
    return hmac.new(key, _DOMAIN + str(offset).encode() + b"\0" + digest, hashlib.sha256).hexdigest()


def seal_path(log_path: Path) -> Path:
    return log_path.with_suffix(SEAL_SUFFIX)


@dataclass(frozen=True)
class Seal:
    offset: int
    tag: str


def read_seal(log_path: Path) -> Seal | None:
    """The seal beside a log, or None when there is none or it is not one scribe writes."""
    try:
        with open(seal_path(log_path), "rb") as fh:
            data = fh.read(_RECORD_LEN + 1)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SealError(f"cannot read {seal_path(log_path)}: {exc.strerror or exc}") from None
    parts = data.decode("ascii", errors="replace").split()
    if len(data) != _RECORD_LEN or len(parts) != 4 or " ".join(parts[:2]) != _MAGIC or not parts[2].isdigit():
        return None
    return Seal(int(parts[2]), parts[3])


def has_seal(log_path: Path) -> bool:
    """A seal file is there (not that it holds): a cheap first look, for choosing a session."""
    return os.path.isfile(seal_path(log_path))


class Sealer:
    """Keeps one log's seal current; owned by that log's writer, under its lock."""

    def __init__(self, log_path: Path, key: bytes) -> None:
        self.path = seal_path(log_path)
        self.key = key
        try:
            self._fd: int | None = open_private(self.path, os.O_WRONLY | os.O_CREAT)
        except OSError as exc:
            raise SealError(f"cannot write the seal {self.path}: {exc.strerror or exc}") from None

    def seal(self, size: int, hasher: Any) -> None:
        """Vouch for the log's first `size` bytes, whose sha256 so far `hasher` holds. One write
        in place of a fixed-width record: the seal is the old one or the new one."""
        record = f"{_MAGIC} {size:020d} {tag(self.key, size, hasher.copy().digest())}\n".encode()
        fd = self._open_fd()
        try:
            if os.pwrite(fd, record, 0) != len(record):
                raise OSError("short write")
        except OSError as exc:
            raise SealError(f"cannot write the seal {self.path}: {exc.strerror or exc}") from None

    def first(self, size: int, hasher: Any) -> None:
        """The seal of a log just opened or adopted; whatever the file held before is gone."""
        self.seal(size, hasher)
        try:
            os.ftruncate(self._open_fd(), _RECORD_LEN)
        except OSError as exc:
            raise SealError(f"cannot write the seal {self.path}: {exc.strerror or exc}") from None

    def sync(self) -> None:
        try:
            os.fsync(self._open_fd())
        except OSError as exc:
            raise SealError(f"cannot write the seal {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open_fd(self) -> int:
        if self._fd is None:
            raise SealError(f"the seal {self.path} is closed")
        return self._fd


@dataclass(frozen=True)
class Authenticity:
    """Whether a log is one scribe wrote for this person, and if not, why, in a few words."""

    ok: bool
    why: str = ""
    sealed: int = 0  # the bytes its seal vouches for (when it holds for them)


def authenticate(log_path: Path, size: int, hasher: Any = None) -> Authenticity:
    """Whether the log's first `size` bytes (its whole lines) are what its seal vouches for.
    `hasher`: the sha256 of exactly those bytes, when the caller has it (a reopen does); else
    the file is read to hash them. Raises SealError when the key or the seal cannot be read."""
    seal = read_seal(log_path)
    if seal is None:
        return Authenticity(False, "it has no seal: written before scribe sealed its logs, or not by "
                                   "scribe on this account (a log committed to a repository, or copied)")
    key = user_key()
    if seal.offset == size and hasher is not None:
        held = hmac.compare_digest(seal.tag, tag(key, size, hasher.copy().digest()))
        return Authenticity(True, sealed=size) if held else _mismatch()
    if seal.offset > size:
        return Authenticity(False, f"it is shorter than its seal says ({size:,} bytes of whole lines, "
                                   f"sealed at {seal.offset:,}): it was cut or replaced")
    with log_path.open("rb") as fh:
        prefix = hashlib.sha256()
        if hash_prefix(fh, seal.offset, prefix) != seal.offset:
            return Authenticity(False, "it is shorter than its seal says: it was cut or replaced")
    if not hmac.compare_digest(seal.tag, tag(key, seal.offset, prefix.digest())):
        return _mismatch()
    return Authenticity(False, f"{size - seal.offset:,} bytes after its last seal were not written by "
                               "scribe (or its writer was stopped between a line and its seal)", sealed=seal.offset)


def authenticate_file(log_path: Path) -> Authenticity:
    """`authenticate` for a log as it is on disk: its whole lines hashed now (one read)."""
    try:
        with log_path.open("rb") as fh:
            size = complete_end_of(fh)
            hasher = hashlib.sha256()
            hash_prefix(fh, size, hasher)
    except OSError as exc:
        raise SealError(f"cannot read {log_path}: {exc.strerror or exc}") from None
    return authenticate(log_path, size, hasher)


def _mismatch() -> Authenticity:
    return Authenticity(False, "its seal does not match its content: it was changed after scribe wrote it, "
                               "or sealed with another key")
