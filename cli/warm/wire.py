"""What the executable and the warm server share: where the server listens, and what each says.

The socket lives in a folder only this user may enter: `$XDG_RUNTIME_DIR/scribe`, else
`/tmp/scribe-<uid>`; a folder there that is a link, another user's, or open to others is not
used (warm start is then off, and the run goes on in its own process). Each installation has
its own server: the socket's name is a digest of the Python executable, scribe's folder, its
version and PYTHONPATH.

Messages are one JSON object per line. The executable sends its request with four file
descriptors (standard input, output, error and its working folder) in the same message; the
server answers `ready` on accept, then `{"pid": N}` for the child that runs the request (or
`{"stale": true}`: the installation changed under it, so it takes no more), and at the end
`{"exit": CODE}` or `{"signal": N}`. Kept to the standard library: the executable imports
this and nothing heavier before it knows whether it needs to.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import scribe

OFF = ("0", "false", "no", "off")
# Only `scribe run` is handed over: the REPL needs the terminal as its own, and the rest import
# nothing slow.
WARM_COMMANDS = ("run",)
MAX_MESSAGE = 1 << 20  # a request with the whole environment fits many times over


class WarmUnavailable(Exception):
    """Warm start cannot be used here; the run goes on in its own process."""


def enabled(environ: dict[str, str] | os._Environ[str]) -> bool:
    return environ.get("SCRIBE_WARM_START", "").strip().lower() not in OFF


def runtime_dir(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """This user's folder for the socket, made 0700 if missing; refused when it is a link,
    another user's, or open to others."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_RUNTIME_DIR")
    folder = Path(base) / "scribe" if base else Path("/tmp") / f"scribe-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, parents=bool(base), exist_ok=True)
        info = os.lstat(folder)
    except OSError as exc:
        raise WarmUnavailable(f"{folder}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise WarmUnavailable(f"{folder} is not a private folder of this user")
    return folder


def installation_key(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    environ = os.environ if environ is None else environ
    parts = [os.path.realpath(sys.executable), os.path.dirname(os.path.realpath(scribe.__file__)),
             scribe.__version__, environ.get("PYTHONPATH", "")]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def socket_path(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    return runtime_dir(environ) / f"warm-{installation_key(environ)}.sock"


# Longer socket paths than this do not fit sockaddr_un (108 bytes on Linux, with its NUL).
MAX_SOCKET_PATH = 100


def connect(conn: socket.socket, path: Path) -> None:
    """Connect to the socket at `path`, however long the folder's path is: a long one is reached
    through this process's descriptor of the folder (Linux's /proc/self/fd)."""
    if len(str(path)) <= MAX_SOCKET_PATH:
        conn.connect(str(path))
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        conn.connect(f"/proc/self/fd/{folder}/{path.name}")
    finally:
        os.close(folder)


def send(conn: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = (json.dumps(message) + "\n").encode()
    if fds:
        conn.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(_fd_array(fds)))])
    else:
        conn.sendall(data)


def _fd_array(fds: list[int]) -> Any:
    import array  # noqa: PLC0415 - only the request carries descriptors

    return array.array("i", fds)


class Reader:
    """Lines (JSON objects) from a connection, and the descriptors sent with them."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buffer = b""
        self.fds: list[int] = []

    def next(self) -> dict[str, Any] | None:
        """The next message, or None when the other side has closed the connection."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_MESSAGE:
                raise ValueError("message too long")
            data, ancillary, _flags, _addr = self.conn.recvmsg(65536, socket.CMSG_SPACE(4 * 8))
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    usable = len(payload) - len(payload) % 4
                    self.fds += list(memoryview(payload[:usable]).cast("i"))
            if not data:
                return None
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a message is not a JSON object")
        return message


def peer_uid(conn: socket.socket) -> int:
    """The user on the other end of a Unix socket (Linux's SO_PEERCRED: pid, uid, gid)."""
    import struct  # noqa: PLC0415

    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]
