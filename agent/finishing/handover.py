"""Handing a session's housekeeping on as it ends, and taking its session back from a finisher.

The finisher is `python -I -m scribe.cli.finish`, started in a session of its own
(no terminal, so no hang-up reaches it) with the run's settings on its stdin. `-I` keeps the
workspace off its import path: a repository could otherwise ship the modules it imports.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.log.jsonl import SessionLock
from scribe.log.private import open_private

FINISHER = "scribe.cli.finish"  # the process's entry point: what it could not do, it prints
# What a finisher could not say anywhere else (it has no terminal): beside the sessions.
ERRORS_FILE = "finishing.err"
# How long taking a session back waits for the finisher it stopped to let go of it.
LET_GO_S = 5.0
# Finishers started by this process: reaped as later ones start, so a long-lived process (the
# Python API, a test runner) keeps no zombie.
_started: list[subprocess.Popen[bytes]] = []


@dataclass(frozen=True)
class Handover:
    """What a session ended with still to do, and the settings it ran under."""

    workspace: Path
    session_id: str
    settings: dict[str, Any]  # Settings.recorded()
    compress: bool  # its raw tail is past the point where it is compressed between turns
    curate: bool  # it taught something the notes have not taken

    def to_json(self) -> str:
        return json.dumps({"workspace": str(self.workspace), "session": self.session_id, "settings": self.settings,
                           "compress": self.compress, "curate": self.curate})

    @classmethod
    def from_json(cls, text: str) -> Handover:
        data = json.loads(text)
        return cls(Path(data["workspace"]), str(data["session"]), dict(data["settings"]), bool(data["compress"]),
                   bool(data["curate"]))

    def what(self) -> str:
        """What it is, in words: "compressing the session's memory and curating the notes"."""
        parts = (["compressing the session's memory"] if self.compress else []) + \
                (["curating the notes"] if self.curate else [])
        return " and ".join(parts)


def detach(handover: Handover, errors: Path) -> int:
    """Start a finisher for `handover`; its pid. It outlives this process by as long as its
    side calls take, then exits; what it could not record in a log goes to `errors`."""
    for proc in list(_started):
        if proc.poll() is not None:
            _started.remove(proc)
    err = open_private(errors, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW)
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-m", FINISHER], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=err, cwd=handover.workspace,
                                start_new_session=True, close_fds=True)
    finally:
        os.close(err)
    assert proc.stdin is not None
    try:
        proc.stdin.write(handover.to_json().encode())
    finally:
        proc.stdin.close()
    _started.append(proc)
    return proc.pid


def take_back(log_path: Path) -> bool:
    """The session at `log_path` is held by another process: if that is a finisher (of this
    person), stop it and wait until it lets go; True once the session is free. False when the
    holder is anything else (a person's session, a run): it keeps the session."""
    pid = SessionLock.holders([log_path]).get(log_path)
    if pid is None:
        return True
    if not is_finisher(pid):
        return False
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + LET_GO_S
    while time.monotonic() < deadline:
        if log_path not in SessionLock.holders([log_path]):
            return True
        time.sleep(0.02)
    return False


def is_finisher(pid: int) -> bool:
    """`pid` is a finisher this user started: its command line runs FINISHER, and it is ours.
    (A process that merely names it in its arguments is not: the module comes after `-m`.)"""
    proc = Path(f"/proc/{pid}")
    try:
        if proc.stat().st_uid != os.getuid():
            return False
        args = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(a == b"-m" and b == FINISHER.encode() for a, b in zip(args, args[1:], strict=False))
