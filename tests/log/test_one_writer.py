"""One writer per session, for real: two `scribe run -c` processes racing on a long log.

The long log matters: reading it takes seconds, and a reader that took the lock only after
reading could then append with a stale `next_seq` (issue 15, point 1). The lock is now taken
before the session is read, so the second process is refused and the log stays whole.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from helpers import SCRIBE, Ran, scribe_env, session_logs, wait_for
from scribe.agent.session.start import start_session
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import AssistantEvent, ObservationEvent, ToolResultEvent, UsageEvent, UserEvent
from scribe.log.verify import verify_bytes
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions

LONG_LOG_EVENTS = 100_000


def write_long_session(workspace: Path, events: int) -> Path:
    """A long session as compression leaves it: turns of a command and its output, an
    observation every 40 turns, and a finished last turn."""
    session = start_session(workspace, Settings(), tool_definitions(builtin_tools()))
    turn = 0
    while session.writer.next_seq < events - 10:
        turn += 1
        if turn % 40 == 0:
            seq = session.writer.next_seq
            session.append(ObservationEvent, text=f"🔴 turn {turn}: the tests ran\n🟡 3 failed", seq_from=max(1, seq - 150),
                           seq_to=seq - 1, tokens=20, model="claude-haiku-5-5")
            continue
        session.append(UserEvent, text=f"step {turn}: run the tests")
        session.append(AssistantEvent, content=[{"type": "tool_use", "id": f"t{turn}", "name": "run_command",
                                                 "input": {"command": "pytest -q"}}], stop_reason="tool_use")
        session.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=10, cache_read=900,
                       cache_write=40, output=20)
        session.append(ToolResultEvent, tool_use_id=f"t{turn}", tool="run_command", output="ok\n" * 150)
    session.append(UserEvent, text="that is all")
    session.append(AssistantEvent, content=[{"type": "text", "text": "Done."}], stop_reason="end_turn")
    session.close()
    return session.path


def wait_for_growth(path: Path, size: int, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    """Until `proc` has appended to the log (it holds the lock by then), or has ended."""
    deadline = time.monotonic() + timeout
    while path.stat().st_size == size and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.slow
def test_two_continues_racing_on_a_long_log_one_is_refused_and_the_log_verifies(workspace: Path, home: Path) -> None:
    log = write_long_session(workspace, LONG_LOG_EVENTS)
    # Where the second process starts: at once; the moment the first has appended (so it holds
    # the lock and is about to call the model); a little after that. Before the fix, a second
    # process that read the log around the first one's turn appended after it with stale seqs.
    starts = ["together", "on_first_append", "after_first_append"]
    # The model answers only once one of the two has ended: whichever holds the lock is still
    # in its turn when the other tries (however fast a run starts), so the race is real.
    release = threading.Event()

    def answer(request: dict) -> Reply:  # type: ignore[type-arg]
        release.wait(60)
        return Reply.text("answered")

    with FakeMessagesServer(answer) as server:
        env = scribe_env(server.base_url, home)
        for start in starts:
            release.clear()
            size = log.stat().st_size
            first = subprocess.Popen([SCRIBE, "run", "-c", f"first ({start})"], cwd=workspace, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if start != "together":
                wait_for_growth(log, size, first)
            if start == "after_first_append":
                time.sleep(0.3)
            second = subprocess.Popen([SCRIBE, "run", "-c", f"second ({start})"], cwd=workspace, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            pair = (first, second)
            assert wait_for(lambda pair=pair: any(proc.poll() is not None for proc in pair), 60), start
            release.set()
            outputs = [proc.communicate(timeout=120) for proc in pair]
            ran = [Ran(proc.returncode, *output) for proc, output in zip(pair, outputs, strict=True)]
            refused = [r for r in ran if r.code == 2]
            assert len(refused) == 1, (start, ran)
            assert [r.code for r in ran if r is not refused[0]] == [0], (start, ran)
            line = refused[0].err.strip()
            assert "\n" not in line and "Traceback" not in line, line
            assert line.startswith(f"scribe: session {log.stem} is being written by process "), line
            assert "another process" not in line  # the pid is known while the lock is held
            verdict = verify_bytes(log.read_bytes())
            assert verdict.ok, (start, [str(f) for f in verdict.errors][:5])
    assert session_logs(workspace) == [log]
