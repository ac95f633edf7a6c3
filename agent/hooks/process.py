"""One hook's process: started like a command, fed the event as JSON on stdin, its stdout and
stderr read apart (each kept up to a cap), ended at its timeout with everything it started.

The environment is a command's (tools/secrets.py `command_env`: no secret variable), plus the
secrets the person's own config names in `pass_env`. A workspace's hook runs in the sandbox a
command runs in (workspace/sandbox/protection.py): a program scribe starts because of what a workspace
holds never runs outside it; where there is no sandbox, the workspace's hooks do not run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from scribe.tools.base import stop_if_cancelled
from scribe.tools.secrets import command_env
from scribe.workspace.sandbox import leftovers
from scribe.workspace.sandbox.protection import Protection, hide_own_process

# Bytes of stdout and of stderr kept; the rest is read and counted, not kept.
OUTPUT_CAP = 64 * 1024
# After the hook's shell exits, how long what it left holding its output may take to finish.
DRAIN_S = 0.5
# The longest a hook is waited for without looking whether the turn was cancelled.
WAIT_SLICE_S = 0.05
_READ = 65536


@dataclass(frozen=True)
class HookProcess:
    """How one hook run went. `exit_code` None: it did not finish (timed out)."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    timed_out: bool = False


class _Capped:
    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    def drain(self, stream: IO[bytes]) -> None:
        try:
            while chunk := stream.read1(_READ):  # type: ignore[attr-defined]
                room = OUTPUT_CAP - len(self.kept)
                self.kept += chunk[:max(room, 0)]
                self.dropped += max(len(chunk) - max(room, 0), 0)
        except (OSError, ValueError):
            pass  # closed under us: the process was ended

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        return text + (f"\n[… {self.dropped} more bytes not kept …]" if self.dropped else "")


def _feed(stream: IO[bytes], data: bytes) -> None:
    try:
        stream.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass  # a hook need not read its input
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _wait(proc: subprocess.Popen[bytes], timeout_s: float, cancelled: threading.Event | None) -> int | None:
    """The hook's exit code, or None once `timeout_s` has passed; in slices a cancel can end."""
    until = time.monotonic() + timeout_s
    while (left := until - time.monotonic()) > 0:
        stop_if_cancelled(cancelled)
        try:
            return proc.wait(min(left, WAIT_SLICE_S))
        except subprocess.TimeoutExpired:
            continue
    return None


def hook_env(pass_env: tuple[str, ...], workspace: Path, event: str,
             environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A command's environment, the named secrets passed through, and where and why it runs."""
    environ = os.environ if environ is None else environ
    env = command_env(environ)
    env.update({name: environ[name] for name in pass_env if name in environ})
    env.update(SCRIBE_PROJECT_DIR=str(workspace), SCRIBE_HOOK_EVENT=event)
    return env


def run_hook_process(command: str, data: bytes, *, workspace: Path, env: dict[str, str], timeout_s: float,
                     protection: Protection | None, cancelled: threading.Event | None = None) -> HookProcess:
    """Run `command` with bash in the workspace: in the sandbox when `protection` is given (it
    must be sandboxed), else as the person's own program. Ctrl-C ends it and is raised again."""
    started = time.monotonic()
    command_id = leftovers.new_command_id()
    env = {**env, leftovers.MARKER: command_id}
    status_r, status_w = os.pipe() if protection is not None else (-1, -1)
    if protection is None:
        hide_own_process()
        if leftovers.can_find():
            leftovers.ensure_reaper(env)
    try:
        argv = protection.argv(command, status_w) if protection is not None else ["bash", "-c", command]
        proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True,
                                pass_fds=(status_w,) if status_w >= 0 else ())
    finally:
        if status_w >= 0:
            os.close(status_w)
    out, err = _Capped(), _Capped()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    readers = [threading.Thread(target=out.drain, args=(proc.stdout,), daemon=True),
               threading.Thread(target=err.drain, args=(proc.stderr,), daemon=True)]
    writer = threading.Thread(target=_feed, args=(proc.stdin, data), daemon=True)
    for thread in (*readers, writer):
        thread.start()
    timed_out = False
    try:
        code = _wait(proc, timeout_s, cancelled)
        if code is None:
            timed_out = True
            _end(proc, command_id, protection)
        for reader in readers:
            reader.join(DRAIN_S)
        if any(r.is_alive() for r in readers):  # something it started still holds its output
            _end(proc, command_id, protection)
            for reader in readers:
                reader.join(DRAIN_S)
        elif protection is None:
            leftovers.end_marked(command_id)
    except BaseException:
        _end(proc, command_id, protection)
        raise
    finally:
        for stream in (proc.stdout, proc.stderr):
            stream.close()
        if status_r >= 0:
            os.close(status_r)
    if code is not None and code < 0:
        code = 128 - code  # killed by a signal, as a shell says it
    return HookProcess(code, out.text(), err.text(), int((time.monotonic() - started) * 1000), timed_out)


def _end(proc: subprocess.Popen[bytes], command_id: str, protection: Protection | None) -> None:
    """The hook and what it started, ended: its process group (in the sandbox, the end of
    bubblewrap ends its whole PID namespace) and, without one, every process with its marker."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if protection is None:
        leftovers.signal_marked(command_id, signal.SIGKILL)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        pass
