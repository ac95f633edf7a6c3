"""The `scribe` executable: a `run` is handed to this user's warm server when one is up (the
package docstring says why); anything else, or a run the server cannot take, runs here.

Handed over, this process stays as the run's face: the shell waits for it, its signals (Ctrl-C,
SIGTERM, SIGHUP, a terminal's resize, Ctrl-Z and `fg`) are passed to the child that does the
work, and it leaves with the child's exit status, or dies of the child's signal. Should it be
killed itself (SIGKILL), the child sees it go and dies too (server.py).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from .wire import WARM_COMMANDS, Reader, WarmUnavailable, connect, enabled, peer_uid, send, socket_path

# How long a server may take to say it is there: a server that is not answering at once is
# not used (the run goes on here).
READY_S = 0.5
# How long it may take to start the child once it has the request.
STARTED_S = 10.0
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGWINCH, signal.SIGCONT, signal.SIGTSTP)
# A server that failed to start is not started again before this many seconds have passed.
RETRY_AFTER_S = 600.0


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] in WARM_COMMANDS and enabled(os.environ):
        try:
            code = hand_over(argv)
        except WarmUnavailable as why:
            if why.args and why.args[0] == "start":
                start_server()
        else:
            leave(code)
    from scribe.cli.app import main as run_here  # noqa: PLC0415 - the point of this module

    run_here()


def hand_over(argv: list[str]) -> int | tuple[str, int]:
    """Run `scribe ARGV` in a child of the warm server; its exit status (an int, or ("signal", N)).
    Raises WarmUnavailable("start") when no server is up, WarmUnavailable otherwise when this
    one cannot be used."""
    try:
        path = socket_path()
    except WarmUnavailable:
        raise WarmUnavailable() from None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(READY_S)
    try:
        connect(conn, path)
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        raise WarmUnavailable("start") from None
    except OSError:
        conn.close()
        raise WarmUnavailable() from None
    with conn:
        return _hand_over(conn, argv)


def _hand_over(conn: socket.socket, argv: list[str]) -> int | tuple[str, int]:
    reader = Reader(conn)
    try:
        if peer_uid(conn) != os.getuid() or not (reader.next() or {}).get("ready"):
            raise WarmUnavailable()
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    except (OSError, ValueError):
        raise WarmUnavailable() from None
    umask = os.umask(0o022)
    os.umask(umask)
    relay = SignalRelay()
    try:
        send(conn, {"argv": ["scribe", *argv], "env": dict(os.environ), "umask": umask, "pid": os.getpid()},
             [0, 1, 2, cwd])
        conn.settimeout(STARTED_S)
        started = reader.next()
        if started is None or started.get("stale"):
            relay.restore()
            raise WarmUnavailable("start")  # it took nothing, and has left its socket to a new one
        relay.child = int(started["pid"])
        conn.settimeout(None)
        while True:
            message = reader.next()
            if message is None:
                return relay.orphaned()
            if "exit" in message:
                return int(message["exit"])
            if "signal" in message:
                return ("signal", int(message["signal"]))
    except (OSError, ValueError, KeyError):
        if relay.child is None:
            relay.restore()
            raise WarmUnavailable() from None
        return relay.orphaned()
    finally:
        os.close(cwd)


class SignalRelay:
    """Signals this process gets go to the child (held until it is known)."""

    def __init__(self) -> None:
        self._child: int | None = None
        self.held: list[int] = []
        self.previous = {sig: signal.signal(sig, self.handle) for sig in FORWARDED}

    @property
    def child(self) -> int | None:
        return self._child

    @child.setter
    def child(self, pid: int) -> None:
        self._child = pid
        for sig in self.held:
            self._pass(sig)
        self.held.clear()

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self._child is None:
            self.held.append(signum)
        else:
            self._pass(signum)

    def _pass(self, signum: int) -> None:
        assert self._child is not None
        try:
            if signum == signal.SIGTSTP:  # Ctrl-Z: the child stops, then this process, as a shell expects
                os.kill(self._child, signal.SIGSTOP)
                signal.signal(signal.SIGTSTP, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTSTP)
                signal.signal(signal.SIGTSTP, self.handle)
            else:
                os.kill(self._child, signum)
        except ProcessLookupError:
            pass

    def restore(self) -> None:
        for sig, previous in self.previous.items():
            signal.signal(sig, previous)

    def orphaned(self) -> int:
        """The server went away while its child ran: wait for the child, whose status is lost."""
        if self._child is not None:
            try:
                fd = os.pidfd_open(self._child)
            except (OSError, AttributeError):
                fd = None
            if fd is not None:
                import select  # noqa: PLC0415

                select.select([fd], [], [])
                os.close(fd)
        print("scribe: the warm server stopped while the run went on; its exit status is unknown "
              "(SCRIBE_WARM_START=0 runs without it)", file=sys.stderr)
        return 1


def leave(status: int | tuple[str, int]) -> None:
    """Leave as the child did: with its exit code, or by its signal."""
    sys.stdout.flush()
    if isinstance(status, tuple):
        signum = status[1]
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal that does not end a process by default
    os._exit(status)


def start_server() -> None:
    """Start the warm server in the background, for the next run; nothing is said, and nothing is
    waited for. Not again soon after one failed to start (its log says why)."""
    try:
        path = socket_path()
    except WarmUnavailable:
        return
    failed = path.with_suffix(".failed")
    try:
        if time.time() - failed.stat().st_mtime < RETRY_AFTER_S:
            return
    except OSError:
        pass
    # Its own environment holds nothing of the person's secrets: each run brings its own.
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "XDG_RUNTIME_DIR", "SCRIBE_WARM_IDLE_S",
                    "PYTHONDONTWRITEBYTECODE", "TMPDIR")}
    log = path.with_suffix(".log")
    try:
        with open(log, "ab", buffering=0) as out:
            os.chmod(log, 0o600)
            subprocess.Popen([sys.executable, "-m", "scribe.cli.warm.server", str(path)], stdin=subprocess.DEVNULL,
                             stdout=out, stderr=out, env=env, start_new_session=True, close_fds=True,
                             cwd=Path(path).parent)
    except OSError:
        pass
