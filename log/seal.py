"""Which logs scribe itself wrote, for whom and where: a session log is sealed as it is written,
and only a log whose seal holds drives an action (continuing it, undo, rewind, curating the notes
from it).

The seal is an HMAC (SHA-256) under a key of the person's own, made once and kept in the
account's folder outside every workspace (log/account.py: `$XDG_STATE_HOME/scribe/seal.key`, else
`~/.local/state/scribe/seal.key`, 0600), which every sandbox hides: no command, hook, MCP server
or git call scribe runs in the sandbox can read it. What the HMAC authenticates:
- the sha256 of the log's bytes up to a line boundary: the hash the writer keeps as it appends
  anyway (log/jsonl.py) and the one a reopen computes to check its checkpoint
  (context/checkpoint.py). The hash is a running one, so the seal of an append-only log is
  chained: each new seal vouches for every byte before it;
- the log's subject: the account (its uid), the session id and the log's place (its folder's
  real path and its name). A sealed log copied to another workspace, another session's name or
  another account's logs is not sealed there.

The seal lives beside the log, `<id>.seal`, as one fixed-width line written in place after each
append (and fsynced with the log at turn ends):

    scribe-seal 2 <offset, 20 digits> <hmac, 64 hex digits>

A seal alone cannot tell a log from an older copy of itself: putting back an earlier log and its
earlier seal would pass. So the account's folder keeps the last seal written for each log too, a
head (`heads/<sha256 of the subject>`, the same line with `scribe-head 2`), written just after
the seal. A log whose seal is behind its head was rolled back, one whose seal differs from its
head at the same place was replaced, and one with no head was copied, restored or moved here
from where this account did not seal it.

What the seal does not cover is never trusted: lines after its offset (appended by something that
does not hold the key, or by a writer killed in the microseconds between a line and its seal)
make the log unauthenticated as a whole, and so does a log with no seal (written before scribe
sealed its logs, or not by this person's scribe: a log committed to a repository), a log sealed
in the first form (`scribe-seal 1`, which named no subject and whose key, `log.key`, older
versions left readable to sandboxed commands), and a log that is a symbolic link. A torn last
line (no newline) is not a line: the reopen cuts it off, as always. `scribe log adopt ID` seals a
log the person vouches for, as it is, where it is.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from scribe.log.account import AccountFolderError, account_folder, check_private, own_account_folder
from scribe.log.private import make_private_folder, open_private
from scribe.log.whole_lines import complete_end_of, hash_prefix

KEY_FILE = "seal.key"
HEADS = "heads"
KEY_BYTES = 32
SEAL_SUFFIX = ".seal"
_MAGIC = "scribe-seal 2"
_HEAD_MAGIC = "scribe-head 2"
_FIRST_FORM = "scribe-seal 1"
_RECORD_LEN = len(f"{_MAGIC} {0:020d} {'0' * 64}\n")
# Set before the HMAC's input: a tag made for anything else never passes for a seal.
_DOMAIN = b"scribe session log seal v2\0"


class SealError(OSError):
    """The key, a seal or a head cannot be read or written (the message says which, and where)."""


def key_path() -> Path:
    """Where the person's key is: the account's folder, outside every workspace."""
    return account_folder() / KEY_FILE


_keys: dict[Path, bytes] = {}


def user_key() -> bytes:
    """The person's key, made on first use (0600, in the 0700 account folder). Raises SealError."""
    path = key_path()
    known = _keys.get(path)
    if known is not None:
        return known
    try:
        own_account_folder()
        try:
            key = _read_key(path)
        except FileNotFoundError:
            key = _make_key(path)
    except AccountFolderError as exc:
        raise SealError(str(exc)) from None
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
    check_private(path, info, "file")  # another account's key, or one others can read, is no key
    text = data.decode("ascii", errors="replace").strip()
    if len(text) != 2 * KEY_BYTES:
        raise SealError(f"the log key {path} is not one scribe made (64 hex digits); move it away and "
                        "scribe makes a new one (logs sealed with the old one then need `scribe log adopt`)")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise SealError(f"the log key {path} is not one scribe made (64 hex digits)") from None


def _make_key(path: Path) -> bytes:
    """A new key, put in place whole and only if none is there (another scribe may race us)."""
    try:
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


@dataclass(frozen=True)
class Subject:
    """Whose log it is and where: the account, the session and the log's place, all in the MAC."""

    uid: int
    session: str
    place: str  # the real path of the log's folder, and its own name (a link to it is no log)

    @classmethod
    def of(cls, log_path: Path) -> Subject:
        place = os.path.join(os.path.realpath(log_path.parent), log_path.name)
        return cls(os.geteuid(), log_path.stem, place)

    def encoded(self) -> bytes:
        return f"{self.uid}\0{self.session}\0".encode() + os.fsencode(self.place) + b"\0"

    def head_path(self) -> Path:
        return account_folder() / HEADS / hashlib.sha256(self.encoded()).hexdigest()


def tag(key: bytes, subject: Subject, offset: int, digest: bytes) -> str:
    """The HMAC of `subject`'s log whose first `offset` bytes hash (sha256) to `digest`."""
    message = _DOMAIN + subject.encoded() + str(offset).encode() + b"\0" + digest
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal_path(log_path: Path) -> Path:
    return log_path.with_suffix(SEAL_SUFFIX)


@dataclass(frozen=True)
class Seal:
    offset: int
    tag: str


def read_seal(log_path: Path) -> Seal | Literal["first form"] | None:
    """The seal beside a log; "first form" for a seal of scribe's first form (it names no
    subject); None when there is none or it is not one scribe writes."""
    return _read_record(seal_path(log_path), _MAGIC, first_form=_FIRST_FORM)


def read_head(subject: Subject) -> Seal | None:
    """The last seal this account wrote for `subject`'s log, or None."""
    found = _read_record(subject.head_path(), _HEAD_MAGIC)
    return found if isinstance(found, Seal) else None


def _read_record(path: Path, magic: str, first_form: str = "") -> Seal | Literal["first form"] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link, which scribe never writes
            return None
        raise SealError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = os.read(fd, _RECORD_LEN + 1)
    finally:
        os.close(fd)
    parts = data.decode("ascii", errors="replace").split()
    if len(data) != _RECORD_LEN or len(parts) != 4 or not parts[2].isdigit():
        return None
    if first_form and " ".join(parts[:2]) == first_form:
        return "first form"
    return Seal(int(parts[2]), parts[3]) if " ".join(parts[:2]) == magic else None


def unsealed(log_path: Path) -> str | None:
    """Why the log has no seal of the current form (None: it has one, whether or not it holds):
    a cheap first look, for choosing a session. Raises SealError when the seal cannot be read."""
    seal = read_seal(log_path)
    if seal == "first form":
        return "it is sealed in scribe's first form"
    return "it has no seal" if seal is None else None


class _Record:
    """One fixed-width record file, written in place."""

    def __init__(self, path: Path, magic: str) -> None:
        self.path, self.magic = path, magic
        try:
            self.fd: int | None = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW)
        except OSError as exc:
            raise SealError(f"cannot write {path}: {exc.strerror or exc}") from None

    def write(self, offset: int, mac: str) -> None:
        record = f"{self.magic} {offset:020d} {mac}\n".encode()
        try:
            if os.pwrite(self._fd(), record, 0) != len(record):
                raise OSError("short write")
        except OSError as exc:
            raise SealError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def cut(self) -> None:
        try:
            os.ftruncate(self._fd(), _RECORD_LEN)
        except OSError as exc:
            raise SealError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def sync(self) -> None:
        try:
            os.fsync(self._fd())
        except OSError as exc:
            raise SealError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _fd(self) -> int:
        if self.fd is None:
            raise SealError(f"{self.path} is closed")
        return self.fd


class Sealer:
    """Keeps one log's seal, and its head in the account's folder, current; owned by that log's
    writer, under its lock."""

    def __init__(self, log_path: Path, key: bytes) -> None:
        self.subject = Subject.of(log_path)
        self.key = key
        self.path = seal_path(log_path)
        head = self.subject.head_path()
        try:
            make_private_folder(head.parent)
        except OSError as exc:
            raise SealError(f"cannot write the seal's record in {head.parent}: {exc.strerror or exc}") from None
        self._seal = _Record(self.path, _MAGIC)
        try:
            self._head = _Record(head, _HEAD_MAGIC)
        except SealError:
            self._seal.close()
            raise
        self._last: tuple[int, str] | None = None

    def seal(self, size: int, hasher: Any) -> None:
        """Vouch for the log's first `size` bytes, whose sha256 so far `hasher` holds: the seal
        first, then the head (a writer stopped between the two leaves a head behind its seal,
        which still holds). Each is one write in place: the old record or the new one."""
        mac = tag(self.key, self.subject, size, hasher.copy().digest())
        self._seal.write(size, mac)
        try:
            self._head.write(size, mac)
        except SealError:
            if self._last is not None:  # the seal must not vouch for a line the writer takes back
                self._seal.write(*self._last)
            raise
        self._last = (size, mac)

    def first(self, size: int, hasher: Any) -> None:
        """The seal of a log just opened or adopted; whatever the files held before is gone."""
        self.seal(size, hasher)
        self._seal.cut()
        self._head.cut()

    def sync(self) -> None:
        self._seal.sync()
        self._head.sync()

    def close(self) -> None:
        self._seal.close()
        self._head.close()


@dataclass(frozen=True)
class Authenticity:
    """Whether a log is one scribe wrote for this person, there, and if not, why, in a few words."""

    ok: bool
    why: str = ""
    sealed: int = 0  # the bytes its seal vouches for (when it holds for them)


def authenticate(log_path: Path, size: int, hasher: Any = None) -> Authenticity:
    """Whether the log's first `size` bytes (its whole lines) are what its seal vouches for, for
    this account, this session and this place, and the latest this account sealed there.
    `hasher`: the sha256 of exactly those bytes, when the caller has it (a reopen does); else the
    file is read to hash them. Raises SealError when the key, the seal or the head cannot be read."""
    if log_path.is_symlink():
        return Authenticity(False, "it is a symbolic link: scribe acts only on a log in its own place")
    seal = read_seal(log_path)
    if seal is None:
        return Authenticity(False, "it has no seal: written before scribe sealed its logs, or not by "
                                   "scribe on this account (a log committed to a repository, or copied)")
    if seal == "first form":
        return Authenticity(False, "it is sealed in scribe's first form, which named neither the account, the "
                                   "session nor the log's place (written by an older scribe, or made elsewhere)")
    key, subject = user_key(), Subject.of(log_path)
    if seal.offset == size and hasher is not None:
        if not hmac.compare_digest(seal.tag, tag(key, subject, size, hasher.copy().digest())):
            return _mismatch()
        return _latest(log_path, key, subject, seal)
    if seal.offset > size:
        return Authenticity(False, f"it is shorter than its seal says ({size:,} bytes of whole lines, "
                                   f"sealed at {seal.offset:,}): it was cut or replaced")
    if not hmac.compare_digest(seal.tag, tag(key, subject, seal.offset, _prefix_digest(log_path, seal.offset))):
        return _mismatch()
    if seal.offset == size:
        return _latest(log_path, key, subject, seal)
    return Authenticity(False, f"{size - seal.offset:,} bytes after its last seal were not written by "
                               "scribe (or its writer was stopped between a line and its seal)", sealed=seal.offset)


def _latest(log_path: Path, key: bytes, subject: Subject, seal: Seal) -> Authenticity:
    """A log whose seal holds, checked against the head: the latest seal this account wrote there."""
    head = read_head(subject)
    if head is None:
        return Authenticity(False, "scribe on this account has no record of sealing it here: it was copied, "
                                   "restored or moved here (or its record in the account's folder was removed)")
    if head.offset > seal.offset:
        return Authenticity(False, f"it was rolled back: scribe last sealed it at {head.offset:,} bytes, and it is "
                                   f"an older state, sealed at {seal.offset:,}")
    if head.offset == seal.offset:
        same = hmac.compare_digest(head.tag, seal.tag)
    else:  # a writer stopped between a seal and its head: the head must vouch for a prefix of this log
        same = hmac.compare_digest(head.tag, tag(key, subject, head.offset, _prefix_digest(log_path, head.offset)))
    if not same:
        return Authenticity(False, "it was replaced: it is not the log scribe last sealed here")
    return Authenticity(True, sealed=seal.offset)


def _prefix_digest(log_path: Path, size: int) -> bytes:
    """The sha256 of the log's first `size` bytes (fewer, when it is shorter: it then matches no seal)."""
    try:
        with log_path.open("rb") as fh:
            prefix = hashlib.sha256()
            if hash_prefix(fh, size, prefix) != size:
                return b""
    except OSError as exc:
        raise SealError(f"cannot read {log_path}: {exc.strerror or exc}") from None
    return prefix.digest()


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
    return Authenticity(False, "its seal does not match its content here: it was changed after scribe wrote it, "
                               "copied or moved from another place or session, or sealed by another account")
