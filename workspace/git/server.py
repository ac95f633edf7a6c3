"""A sandbox that stays: scribe's git calls go to one long-lived bubblewrap per protection and
mode (a question, or a change) instead of starting one per call. Starting bubblewrap costs more
than most git commands it runs (its namespaces, mounts and init), and git calls sit at the start
and end of every turn.

What stays the same as one sandbox per call: a request (one git command, or several run one
after another) runs each command in its own subshell with the environment scribe gives it,
from the folder it names, with no stdin; and when the request ends, every other process in the
sandbox is killed (`kill -KILL -1` from inside the PID namespace) before the answer is written,
so nothing a git command started outlives it. Output goes through files in a folder scribe made
for the sandbox (0700, bound in writable), named by a random token per request, read without
following a link and removed.

A request that outlasts its timeout ends the whole sandbox; the next request starts another. So
does a sandbox that died (bubblewrap's --die-with-parent follows the thread that started it)."""

from __future__ import annotations

import atexit
import os
import secrets
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scribe.workspace.sandbox.bwrap import Confinement

# $1: the exchange folder, $2 the sandbox's own environment variables (unset for every command).
# Each request, NUL-terminated fields: token, folder, 1 to stop at the first command that fails,
# a count and NAME=VALUE environment entries, a count of commands and, for each, a count and its
# arguments. The answer: the token and each command's status, on a line; command J's output is
# in $1/TOKEN.J.out and .err.
_SERVER = r'''
d=$1; own=$2
while IFS= read -r -d '' id && IFS= read -r -d '' cwd && IFS= read -r -d '' k && IFS= read -r -d '' n; do
  e=(); for ((i = 0; i < n; i++)); do IFS= read -r -d '' x; e+=("$x"); done
  IFS= read -r -d '' m; r=""; stop=""
  for ((j = 0; j < m; j++)); do
    IFS= read -r -d '' n; a=(); for ((i = 0; i < n; i++)); do IFS= read -r -d '' x; a+=("$x"); done
    [ -n "$stop" ] && continue
    (unset $own; ((${#e[@]})) && export "${e[@]}" 2>/dev/null; cd -- "$cwd" && exec "${a[@]}") \
      </dev/null >"$d/$id.$j.out" 2>"$d/$id.$j.err"
    s=$?; r="$r $s"; ((s && k)) && stop=1
  done
  kill -KILL -1 2>/dev/null
  # the answer waits until they are gone (the namespace's init reaps them): only init and this remain
  for ((w = 0; w < 5000; w++)); do p=(/proc/[0-9]*); ((${#p[@]} <= 2)) && break; done
  printf '%s%s\n' "$id" "$r"
done
'''
_OWN = "PATH"  # the only variable the sandbox itself starts with
MAX_SERVERS = 4  # a process that meets many workspaces (the tests) keeps the latest few


class ServerGone(OSError):
    """The sandbox could not be started, or ended before it answered."""


class GitServer:
    """One sandbox, started on the first request, answering one request at a time."""

    def __init__(self, box: Confinement, writes: bool) -> None:
        self.box = box
        self.writes = writes
        self.exchange = Path(tempfile.mkdtemp(prefix="scribe-git-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str],
            timeout: float) -> tuple[int, bytes, bytes]:
        """(status, stdout, stderr) of `argv`; subprocess.TimeoutExpired past `timeout`."""
        return self.run_many([argv], cwd, env, timeout)[0]

    def run_many(self, commands: Sequence[Sequence[str]], cwd: Path, env: Mapping[str, str], timeout: float, *,
                 stop: bool = False) -> list[tuple[int, bytes, bytes]]:
        """(status, stdout, stderr) of each command, run one after another; with `stop`, up to the
        first that fails. subprocess.TimeoutExpired past `timeout` for them all."""
        with self._lock:
            try:
                return self._request(commands, cwd, env, timeout, stop)
            except ServerGone:
                self._stop()  # it died (or never started): once more, in a new one
                return self._request(commands, cwd, env, timeout, stop)

    def _request(self, commands: Sequence[Sequence[str]], cwd: Path, env: Mapping[str, str],
                 timeout: float, stop: bool) -> list[tuple[int, bytes, bytes]]:
        proc = self._start()
        token = secrets.token_hex(12)
        fields = [token, str(cwd), "1" if stop else "0", str(len(env)), *(f"{k}={v}" for k, v in env.items()),
                  str(len(commands))]
        for argv in commands:
            fields += [str(len(argv)), *argv]
        try:
            assert proc.stdin is not None
            proc.stdin.write(b"".join(os.fsencode(f) + b"\0" for f in fields))
            proc.stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise ServerGone(self._complaint(proc) or f"git's sandbox ended: {exc}") from None
        line = self._answer(proc, timeout, commands[0])
        name, *statuses = line.decode("ascii", errors="replace").split()
        if name != token or not all(s.lstrip("-").isdigit() for s in statuses) or len(statuses) > len(commands):
            self._stop()
            raise ServerGone(f"git's sandbox answered out of turn: {line[:80]!r}")
        return [(int(status), self._take(f"{token}.{j}.out"), self._take(f"{token}.{j}.err"))
                for j, status in enumerate(statuses)]

    def _answer(self, proc: subprocess.Popen[bytes], timeout: float, argv: Sequence[str]) -> bytes:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                self._stop()  # the whole sandbox ends with what ran too long
                raise subprocess.TimeoutExpired(list(argv), timeout)
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    raise ServerGone(self._complaint(proc) or "git's sandbox ended before it answered")
                line += chunk
        return line

    @staticmethod
    def _complaint(proc: subprocess.Popen[bytes]) -> str:
        """bubblewrap's first line, when it could not start the sandbox."""
        try:
            proc.wait(timeout=5)
            said = proc.stderr.read() if proc.stderr is not None else b""
        except (OSError, subprocess.TimeoutExpired):
            return ""
        lines = said.decode("utf-8", errors="replace").strip().splitlines()
        return lines[0] if lines else ""

    def _take(self, name: str) -> bytes:
        """An output file, read without following a link, then removed."""
        try:
            fd = os.open(self.exchange / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return b""
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)
            (self.exchange / name).unlink(missing_ok=True)

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        argv = self.box.confine(["bash", "-c", _SERVER, "scribe-git-sandbox", str(self.exchange), _OWN],
                                writes=self.writes, binds=[str(self.exchange)])
        try:
            # stderr: only bubblewrap writes there (git's goes to a file), and only when it fails
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env={"PATH": os.environ.get("PATH", os.defpath)},
                                          cwd="/")
        except OSError as exc:
            raise ServerGone(f"git's sandbox cannot start: {exc}") from None
        return self._proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass  # already broken: it ended
        proc.kill()
        proc.wait()

    def close(self) -> None:
        with self._lock:
            self._stop()
        shutil.rmtree(self.exchange, ignore_errors=True)


_servers: OrderedDict[tuple[Confinement, bool], GitServer] = OrderedDict()
_servers_lock = threading.Lock()


def server_for(box: Confinement, writes: bool) -> GitServer:
    """The sandbox git runs in for `box` and mode `writes`, made on first use."""
    key = (box, writes)
    with _servers_lock:
        server = _servers.get(key)
        if server is not None:
            _servers.move_to_end(key)
            return server
        server = _servers[key] = GitServer(box, writes)
        evicted = [_servers.popitem(last=False)[1] for _ in range(len(_servers) - MAX_SERVERS)]
    for old in evicted:
        old.close()
    return server


@atexit.register
def close_all() -> None:
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.close()
