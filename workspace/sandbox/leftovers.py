"""Finding and ending what a command left running when no sandbox does it for us.

Inside the sandbox every process a command starts lives in the command's PID namespace and dies
with it. Without one, a background job can leave the process group (`setsid`, a daemon's
double fork), so each command's processes carry a marker variable in their environment,
`SCRIBE_COMMAND_ID`, and are found by it in /proc. A process that clears its environment
(`env -i`) loses the marker and is not found; the README says so.

The same marker covers scribe's own death: a small reaper process (`python -m
scribe.workspace.sandbox.leftovers PREFIX`) waits for its stdin, a pipe only scribe holds, to close, which
happens however scribe ends, SIGKILL included, and then ends every process still marked with
this scribe's prefix."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from itertools import count
from pathlib import Path

MARKER = "SCRIBE_COMMAND_ID"
# After SIGTERM, how long leftovers get to exit before SIGKILL.
END_GRACE_S = 0.5
_POLL_S = 0.02
_PROC = Path("/proc")
# What a prefix must look like: an instance's (pid-hex-) or one command's (pid-hex-N.). An empty
# or shorter one would reach the commands of every scribe on the machine.
_PREFIX = re.compile(r"[0-9]+-[0-9a-f]{8}-(?:[0-9]+\.)?")

_instance = f"{os.getpid()}-{secrets.token_hex(4)}"
_numbers = count(1)
_reaper: subprocess.Popen[bytes] | None = None
_reaper_lock = threading.Lock()


def can_find() -> bool:
    """Whether this system shows other processes' environments (Linux /proc)."""
    return (_PROC / "self" / "environ").exists()


def new_command_id() -> str:
    """A marker value unique to one command of this scribe process. It ends in "." so that no
    command's id is a prefix of another's (…-1. and …-10.), while all start with the
    instance prefix."""
    return f"{_instance}-{next(_numbers)}."


def instance_prefix() -> str:
    return f"{_instance}-"


def marked(prefix: str) -> list[int]:
    """Processes whose environment holds MARKER with a value starting with `prefix`."""
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(f"not a scribe command marker: {prefix!r}")
    needle = f"{MARKER}={prefix}".encode()
    found = []
    me = os.getpid()
    for entry in _PROC.iterdir() if can_find() else ():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue  # gone already, or not ours to read
        if environ.startswith(needle) or b"\0" + needle in environ:
            found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its parent's wait is missing


def signal_marked(prefix: str, sig: signal.Signals) -> list[int]:
    """Send `sig` to every process marked with `prefix`; returns those it reached."""
    reached = []
    for pid in marked(prefix):
        try:
            os.kill(pid, sig)
            reached.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    return reached


def end_marked(prefix: str, grace_s: float = END_GRACE_S) -> int:
    """End every process marked with `prefix` (SIGTERM, then SIGKILL after `grace_s`).
    Returns how many were still running."""
    pids = [pid for pid in marked(prefix) if _alive(pid)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace_s
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    for pid in pids:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return len(pids)


def ensure_reaper(env: dict[str, str]) -> None:
    """Start, once per scribe process, the reaper that ends this process's marked leftovers
    when it dies. `env` is the commands' environment without secrets (the reaper needs none)."""
    global _reaper
    with _reaper_lock:
        if _reaper is not None and _reaper.poll() is None:
            return
        clean = {k: v for k, v in env.items() if k != MARKER}
        # Its own session: a Ctrl-C to scribe's terminal must not end it before scribe is done.
        # No stdout/stderr: it must not hold the pipes of whoever waits for scribe's output.
        _reaper = subprocess.Popen(
            [sys.executable, "-m", "scribe.workspace.sandbox.leftovers", instance_prefix()],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=clean, close_fds=True,
        )


def _reap(prefix: str) -> None:
    """The reaper's body: wait for scribe to go, then end what its commands left."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    except OSError:
        pass
    end_marked(prefix)


if __name__ == "__main__":
    _reap(sys.argv[1])
