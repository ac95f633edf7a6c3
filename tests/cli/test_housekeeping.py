"""What a `scribe run` leaves (its memory's compression, the notes' curation) is never on its way:
the run exits while those side calls are still at the server, a finisher process of its own does
them and exits, and the next run's request holds what it made. A run that continues the session
while its finisher is still at it takes the session back at once; nothing is lost.

The fake API holds each side call until the test lets it go, so "the run did not wait" is a fact
about order, not a timing. Real processes: the process is the subject."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from helpers import events_of, left_running, run_scribe, scribe_env, session_logs, wait_for
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, side_call_kind
from scribe.fakeapi.script import ScriptItem
from scribe.log.events import ErrorEvent, NotesEvent, ObservationEvent, UsageEvent

FACT = "Remember: the tests run with `make check-all`, never with pytest directly."


class HeldSideCalls:
    """A fake API whose side calls of `kinds` wait for `release()`; the agent's are answered at once."""

    def __init__(self, model: Callable[[dict[str, Any]], ScriptItem], kinds: tuple[str, ...]) -> None:
        self.model, self.kinds = model, kinds
        self.arrived = threading.Semaphore(0)
        self._go = threading.Event()

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        if side_call_kind(request) in self.kinds:
            self.arrived.release()
            self._go.wait(120)
        return self.model(request)

    def release(self) -> None:
        self._go.set()

    def hold(self) -> None:
        self._go.clear()


def system_of(request: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in request["system"])


def agent_requests(server: FakeMessagesServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests if side_call_kind(r.json) == "agent"]


def test_a_run_exits_while_its_curation_is_at_the_server_and_the_next_run_holds_the_notes(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    held = HeldSideCalls(SideCallModel(lambda request: Reply.text("Noted.")), ("curator",))
    with FakeMessagesServer(held) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true", SCRIBE_HOUSEKEEPING="detached")
        first = run_scribe(["run", FACT], workspace, env, process=True)
        assert first.code == 0, first.err
        assert first.err == ""  # nothing said about housekeeping: it is not the person's wait
        # The run has exited; its curation reaches the server from the finisher, and waits there.
        assert held.arrived.acquire(timeout=60)
        assert not (workspace / ".scribe" / "notes.md").exists()
        assert left_running(str(tmp_path))  # the finisher, waiting on its side call
        held.release()
        assert wait_for(lambda: not left_running(str(tmp_path)), 60)  # it exits once done
        assert "make check-all" in (workspace / ".scribe" / "notes.md").read_text()
        second = run_scribe(["run", "How do I run the tests?"], workspace, env, process=True)
        assert second.code == 0, second.err
        assert "make check-all" in system_of(agent_requests(server)[-1])
    first_log = events_of(session_logs(workspace)[0])
    assert [e.purpose for e in first_log if isinstance(e, UsageEvent)] == ["agent", "curator"]
    assert any(isinstance(e, NotesEvent) for e in first_log)


def test_a_session_that_teaches_nothing_costs_no_curation(workspace: Path, home: Path, tmp_path: Path) -> None:
    model = SideCallModel(lambda request: Reply.text("Hi there, friend, how are you?"))
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true", SCRIBE_HOUSEKEEPING="detached")
        for prompt in ("hello", "Say hi in five words.", "what does main.py do?", "hello", "hello"):
            ran = run_scribe(["run", prompt], workspace, env, process=True)
            assert ran.code == 0 and ran.err == "", ran.err
        assert left_running(str(tmp_path)) == []  # nothing was left to do, so nothing was started
    assert model.calls["curator"] == 0


def paste(k: int, lines: int = 150) -> str:
    return "\n".join(f"paste {k} line {i}: the quick brown fox jumps over the lazy dog {i * k}" for i in range(lines))


SMALL_WINDOW = {"SCRIBE_CONTEXT_TOKENS": "9000", "SCRIBE_OBSERVE_TOKENS": "3000", "SCRIBE_OBSERVE_ON_PAYBACK": "false",
                "SCRIBE_COMPRESS_WHEN_COLD": "false", "SCRIBE_WATCH_FILES": "0"}


def test_a_compression_is_made_after_the_run_and_a_continuing_run_takes_the_session_back(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    model = SideCallModel(lambda request: Reply.text("read it"),
                          habit="canonical")
    held = HeldSideCalls(model, ("observer", "reflector"))
    with FakeMessagesServer(held) as server:
        env = scribe_env(server.base_url, home, SCRIBE_HOUSEKEEPING="detached", **SMALL_WINDOW)
        for k in (1, 2):  # the first turn is kept raw whole (the retention floor): nothing is due yet
            ran = run_scribe(["run", *(["-c"] if k > 1 else []), "-p", "read-only", "-"], workspace, env,
                             stdin=paste(k), process=True)
            assert ran.code == 0, ran.err
        # The second run's request went raw (it fit the window); the compression of the first
        # turn waits at the server, after it.
        assert held.arrived.acquire(timeout=60)
        assert len(agent_requests(server)) == 2

        # The person continues while the finisher is still at it: the run takes the session back
        # at once, its request raw, and the finisher records what it left.
        second = run_scribe(["run", "-c", "-p", "read-only", "and this"], workspace, env, process=True)
        assert second.code == 0, second.err
        log = session_logs(workspace)[0]
        events = events_of(log)
        left = [e for e in events if isinstance(e, ErrorEvent) and e.kind == "compression_left"]
        assert left and "a run continued the session" in left[0].message
        assert not any(isinstance(e, ObservationEvent) for e in events)
        assert "paste 1 line 3" in str(agent_requests(server)[-1]["messages"])

        # The second run's own finisher compresses what is due; the third run's request holds it.
        assert held.arrived.acquire(timeout=60)
        held.release()
        assert wait_for(lambda: not left_running(str(tmp_path)), 60)
        events = events_of(log)
        assert any(isinstance(e, ObservationEvent) for e in events)
        third = run_scribe(["run", "-c", "-p", "read-only", "go on"], workspace, env, process=True)
        assert third.code == 0, third.err
        last = str(agent_requests(server)[-1]["messages"])
        assert "paste 1 line 3" not in last  # observed: the request holds the observation instead
    assert len(session_logs(workspace)) == 1


def test_the_finisher_imports_nothing_from_the_workspace(workspace: Path, home: Path, tmp_path: Path) -> None:
    """A repository can ship modules named as scribe's own imports; the finisher runs from the
    workspace, and never imports them."""
    marker = tmp_path / "IMPORTED"
    for name in ("scribe/__init__.py", "anthropic/__init__.py", "sitecustomize.py", "usercustomize.py", "json.py"):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n")
    model = SideCallModel(lambda request: Reply.text("Noted."))
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true", SCRIBE_HOUSEKEEPING="detached")
        ran = run_scribe(["run", FACT], workspace, env, process=True)
        assert ran.code == 0, ran.err
        assert wait_for(lambda: model.calls["curator"] == 1, 60)
        assert wait_for(lambda: not left_running(str(tmp_path)), 60)
    assert "make check-all" in (workspace / ".scribe" / "notes.md").read_text()
    assert not marker.exists(), marker.read_text()


def test_a_compression_the_window_needs_is_made_before_the_call_and_said_with_its_seconds(
        workspace: Path, home: Path) -> None:
    model = SideCallModel(lambda request: Reply.text("read it"))
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, **SMALL_WINDOW)
        for k in (1, 2):
            ran = run_scribe(["run", *(["-c"] if k > 1 else []), "-p", "read-only", "-"], workspace, env,
                             stdin=paste(k, lines=100))
            assert ran.code == 0, ran.err
        # a paste that does not fit beside what is raw: the call waits for the compression
        big = run_scribe(["run", "-c", "-p", "read-only", "-"], workspace, env, stdin=paste(3, lines=330))
    assert big.code == 0, big.err
    lines = big.err.splitlines()
    assert "scribe: " not in big.err.split("memory: this request does not fit")[0]  # said first
    assert any(line.startswith("memory: this request does not fit the context window as it is") for line in lines)
    done = [line for line in lines if line.startswith("memory: compressed in ")]
    assert len(done) == 1 and done[0].endswith(" s; the request goes ahead")
    kinds = [side_call_kind(r.json) for r in server.requests]
    last_agent = max(i for i, kind in enumerate(kinds) if kind == "agent")
    assert kinds[last_agent - 1] == "observer"  # made before the call, which then fit
