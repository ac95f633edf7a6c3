"""The warm server: `python -m scribe.cli.warm.server SOCKET`, started in the background by the
`scribe` executable (launch.py) when it finds none.

It imports scribe and the Anthropic SDK once, then for each run it is handed forks a child: the
child takes the executable's standard input, output and error, working folder, umask and whole
environment, and runs `scribe run ...` as the executable would have (exit codes, signals and
what it prints the same); the server tells the executable when the child ends and how. The
server itself holds none of the person's environment (it was started with a bare one), never
runs a model call, and keeps no state a run could leave behind: each run is a fresh fork.

It takes no request once the installation changed under it (a file of a module it loaded, by
mtime and size: an upgrade, an edit), answering `stale` and giving its socket up to a new server,
and it leaves after SCRIBE_WARM_IDLE_S seconds (default 900) with nothing to do, or on SIGTERM,
once its running children have ended.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import os
import select
import selectors
import signal
import socket
import sys
import threading
import time
import traceback
from pathlib import Path
from types import FrameType
from typing import Any

import scribe

from .wire import Reader, peer_uid, send

IDLE_S = 900.0
HANDSHAKE_S = 2.0


def main(argv: list[str]) -> None:
    path = Path(argv[0])
    lock = _lock(path)
    if lock is None:
        return  # another server of this installation is up or starting
    try:
        _warm_up()
    except BaseException:
        path.with_suffix(".failed").touch()
        raise
    with contextlib.suppress(FileNotFoundError):
        path.with_suffix(".failed").unlink()
    Server(path, lock).serve()


def _lock(path: Path) -> int | None:
    """This installation's server lock, held as long as the socket is this server's."""
    fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())  # who holds it: `kill $(cat …lock)` stops the server
    return fd


def stop_servers(folder: Path) -> None:
    """Stop the warm servers whose locks are in `folder` (a runtime folder of scribe's, as a test
    or a benchmark makes one): each lock names its holder."""
    for lock in folder.glob("*.lock"):
        pid = lock.read_text().strip()
        if pid.isdigit():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGTERM)


def _warm_up() -> None:
    """What a `scribe run` imports, imported now (and nothing started: no thread, no connection)."""
    from scribe.agent import assembly  # noqa: F401, PLC0415 - the point of the server
    from scribe.cli import headless, run  # noqa: F401, PLC0415
    from scribe.cli.app import load_command  # noqa: PLC0415
    from scribe.model.client import _sdk  # noqa: PLC0415

    load_command("run")
    _sdk()
    import anthropic.lib.streaming  # noqa: F401, PLC0415


def fingerprint(runtime: Path) -> dict[str, tuple[int, int]]:
    """Every file of scribe's own tree (its modules and the data they read, a new file too), and
    every folder on the import path (installing, upgrading or removing a package adds and
    removes its entries there) but the server's own `runtime` folder (`-m` puts its working
    folder first on the path), by mtime and size."""
    out: dict[str, tuple[int, int]] = {}
    own = os.path.dirname(os.path.realpath(scribe.__file__))
    for folder, subfolders, files in os.walk(own):
        subfolders[:] = [f for f in subfolders if f not in ("tests", "benchmarks", "__pycache__") and not f.startswith(".")]
        for name in files:
            if not name.endswith((".pyc", ".pyo")):
                _stat_into(out, os.path.join(folder, name))
    for entry in sys.path:
        if entry and os.path.isdir(entry) and not os.path.samefile(entry, runtime):
            _stat_into(out, entry)
    return out


def _stat_into(out: dict[str, tuple[int, int]], path: str) -> None:
    with contextlib.suppress(OSError):
        info = os.stat(path)
        out[path] = (info.st_mtime_ns, info.st_size)


class Server:
    def __init__(self, path: Path, lock: int) -> None:
        self.path, self.lock = path, lock
        self.children: dict[int, socket.socket] = {}
        self.stopping = False
        self.installed = fingerprint(path.parent)
        self.idle_s = float(os.environ.get("SCRIBE_WARM_IDLE_S") or IDLE_S)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # a socket left by a server that died: the lock says none is up
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # By its name in the server's own folder (its working folder), whatever that folder's
        # path: a long one would not fit a socket address.
        os.chdir(path.parent)
        self.listener.bind(path.name)
        os.chmod(path, 0o600)
        self.listener.listen(64)
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} started (pid {os.getpid()})", flush=True)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, _nothing)
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")

    def serve(self) -> None:
        idle_since = time.monotonic()
        while True:
            if self.stopping and self.listener.fileno() >= 0:
                self._give_up_socket()
            if self.stopping and not self.children:
                return
            timeout = None if self.children or self.stopping else max(0.0, self.idle_s - (time.monotonic() - idle_since))
            events = self.selector.select(timeout)
            if not events and not self.children and time.monotonic() - idle_since >= self.idle_s:
                self.stopping = True
            for key, _ in events:
                if key.data == "accept":
                    conn, _ = self.listener.accept()
                    self._take(conn)
                    idle_since = time.monotonic()
                else:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self.wake_r, 512):
                            pass
            self._reap()
            if self.children:
                idle_since = time.monotonic()

    def _take(self, conn: socket.socket) -> None:
        reader = Reader(conn)
        try:
            conn.settimeout(HANDSHAKE_S)
            if peer_uid(conn) != os.getuid():
                conn.close()
                return
            send(conn, {"ready": True})
            request = reader.next()
            if request is None or len(reader.fds) != 4:
                raise ValueError("no request")
            if fingerprint(self.path.parent) != self.installed:
                print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} the installation changed: leaving", flush=True)
                send(conn, {"stale": True})
                self.stopping = True
                self._give_up_socket()
                raise ValueError("stale")
            pid = os.fork()
            if pid == 0:
                self._child(request, reader.fds)  # never returns
            self.children[pid] = conn
            send(conn, {"pid": pid})
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} scribe {request['argv'][1]}: child {pid}", flush=True)
        except (OSError, ValueError, TypeError):
            if conn not in self.children.values():
                conn.close()
        finally:
            for fd in reader.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _give_up_socket(self) -> None:
        """Take no more runs: the socket and the lock go to whichever server starts next."""
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.listener)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.listener.close()
        with contextlib.suppress(OSError):
            os.close(self.lock)

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            message = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
                       else {"exit": os.waitstatus_to_exitcode(status)})
            with contextlib.suppress(OSError):
                send(conn, message)
            conn.close()

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True

    def _child(self, request: dict[str, Any], fds: list[int]) -> None:
        """The forked child: become the run the executable asked for, then exit as it would."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            self.selector.close()
            self.listener.close()
            for fd in (self.wake_r, self.wake_w, self.lock):
                os.close(fd)
            for conn in self.children.values():
                conn.close()
            for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.setpgid(0, 0)  # signals meant for the server's group are not this run's
            for target, fd in enumerate(fds[:3]):
                os.dup2(fd, target)
            os.fchdir(fds[3])
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            os.umask(int(request["umask"]))
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
            _standard_streams()
            sys.argv = [str(a) for a in request["argv"]]
            _die_with(int(request["pid"]))
            code = _run()
        except BaseException:  # noqa: BLE001 - what the executable would print, then its exit
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            _exit(code)


def _nothing(signum: int, frame: FrameType | None) -> None:
    """SIGCHLD wakes the server's select (set_wakeup_fd); the reaping is done there."""


def _standard_streams() -> None:
    """Standard input, output and error as Python makes them at start, over descriptors 0-2 as
    they now are (the executable's): the server's were made for its own /dev/null and log."""
    encoding = os.environ.get("PYTHONIOENCODING", "").split(":")[0] or "utf-8"
    streams = {
        0: io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding=encoding,
                            errors="surrogateescape" if encoding == "utf-8" else "strict"),
        1: io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)), encoding=encoding,
                            errors="strict", line_buffering=os.isatty(1)),
        2: io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "wb", closefd=False)), encoding=encoding,
                            errors="backslashreplace", line_buffering=True),
    }
    sys.stdin = sys.__stdin__ = streams[0]
    sys.stdout = sys.__stdout__ = streams[1]
    sys.stderr = sys.__stderr__ = streams[2]


def _die_with(pid: int) -> None:
    """End this run the moment the executable that asked for it is gone (killed, say): it is the
    run, as far as the person can see."""
    try:
        watched = os.pidfd_open(pid)
    except OSError:
        os.kill(os.getpid(), signal.SIGKILL)
        return

    def wait() -> None:
        select.select([watched], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait, name="scribe-warm-executable", daemon=True).start()


def _run() -> int:
    from scribe.cli.app import main as scribe_main  # noqa: PLC0415 - imported already, by _warm_up

    try:
        scribe_main()
    except SystemExit as end:
        if end.code is None:
            return 0
        if isinstance(end.code, int):
            return end.code
        print(end.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # uncaught, as Python's own exit on Ctrl-C: by SIGINT
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return 0


def _exit(code: int) -> None:
    """What the interpreter does as a program ends, then leave without the server's own exit."""
    main_thread = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main_thread and not thread.daemon:
            thread.join()
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
