"""Driving a scripted session through the `scribe` executable, as a person scripting it would:
`scribe run PROMPT` for the first turn, then `scribe run -c PROMPT` for each next one, each a new
process, against one long-lived fake Messages API in this process. Every call the user would pay
for is billed there (agent, observer, reflector, curator), including what the next session's
start does for this one, and process start and reopen are in the wall time.

Idle gaps: before a turn that comes after the person was away, the fake server's cache clock is
advanced by the gap, and the scribe process is started with its clock moved on by the sum of
all gaps so far (libfaketime, preloaded into that process only), so scribe sees the time pass
that the server's cache saw: timestamps in its log stay in order and its cold-cache checks see
the gap.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scribe.fakeapi import FakeMessagesServer, RecordedRequest
from scribe.log.events import Event
from scribe.log.jsonl import read_log

from .bills import purpose_of
from .replay import temporary_repository
from .scripted_model import ScriptedModel
from .sessions import ScriptedSession

NEXT_SESSION = "Good morning: where were we?"


class ChainFailed(RuntimeError):
    """A `scribe run` of the chain did not end its turn normally."""


@dataclass(frozen=True)
class Executable:
    label: str
    scribe: Path  # the console script


@dataclass
class ChainRun:
    session: ScriptedSession
    requests: list[RecordedRequest]
    events: list[Event]  # the session's log, as this tree's reader reads it
    model: ScriptedModel
    seconds: float  # wall time of all the processes
    processes: int


def run_chain(session: ScriptedSession, executable: Executable, settings: dict[str, str]) -> ChainRun:
    """`settings`: SCRIBE_* variables for every run (how a rule is turned off)."""
    model = ScriptedModel(session)
    with temporary_repository() as workspace, tempfile.TemporaryDirectory(prefix="scribe-bench-home-") as home, \
            FakeMessagesServer(model) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRIBE_", "ANTHROPIC_", "FAKETIME"))}
        env |= {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "benchmark-no-key", "HOME": home,
                "XDG_CONFIG_HOME": str(Path(home) / ".config"), "SCRIBE_PERMISSION_MODE": "full-auto", **settings}
        away = 0.0
        log_path = ""
        seconds = 0.0
        for n, turn in enumerate(session.turns):
            if turn.idle_before_s:
                server.advance(turn.idle_before_s)
                away += turn.idle_before_s
            args = [str(executable.scribe), "run", *(["-c"] if n else []), "--output", "json", turn.prompt]
            started = time.monotonic()
            done = subprocess.run(args, cwd=workspace, env=env | _clock_moved(away), capture_output=True,
                                  text=True, timeout=300)
            seconds += time.monotonic() - started
            if done.returncode != 0:
                raise ChainFailed(f"{executable.label}, {session.name}, turn {n}: exit {done.returncode}: "
                                  f"{(done.stderr or done.stdout).strip()[-800:]}")
            log_path = json.loads(done.stdout.strip().splitlines()[-1])["log"]
        requests = list(server.requests)
        # Work a session leaves for later is billed to it too: a person's next session starts
        # (a new `scribe run`), and whatever that process calls before its own first agent call
        # is done for the sessions before it (today: curating them into the notes).
        started = time.monotonic()
        done = subprocess.run([str(executable.scribe), "run", "--output", "json", NEXT_SESSION], cwd=workspace,
                              env=env | _clock_moved(away), capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise ChainFailed(f"{executable.label}, {session.name}, next session: exit {done.returncode}: "
                              f"{(done.stderr or done.stdout).strip()[-800:]}")
        later = list(server.requests)[len(requests):]
        # by its system prompt: side calls carry a tool too (the forced one they answer through)
        first_agent = next((i for i, r in enumerate(later) if purpose_of(r.json) == "agent"), len(later))
        requests += later[:first_agent]
        seconds += time.monotonic() - started
        events = read_log(Path(log_path)).events
        return ChainRun(session, requests, events, model, seconds, len(session.turns) + 1)


def _clock_moved(seconds: float) -> dict[str, str]:
    """Environment that starts a process with its wall clock `seconds` ahead (none for 0)."""
    if not seconds:
        return {}
    try:
        import libfaketime
    except ImportError:
        raise ChainFailed("the idle-gap session needs libfaketime: pip install -e '.[bench]'") from None
    _, preload = libfaketime.get_reload_information()
    # The commands scribe runs inherit the preload and the name of the shared memory libfaketime
    # made in the scribe process; inside the sandbox, /dev/shm is a private one without it, and
    # every command would fail ("sem_open failed") instead of printing its output. The sandbox
    # changes no figure of the bill, so a moved clock runs without it.
    return {**preload, "FAKETIME": f"+{int(seconds)}s", "SCRIBE_SANDBOX": "false"}
