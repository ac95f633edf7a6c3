"""One protocol, every front end: the same multi-turn session (two messages, one approval
answered, one cancel) driven through `scribe run --input-format stream-json -o stream-json` and
through the Python API, each checked on what the fake API received, on the events and on the log.
And no front end opens a model client, an MCP hub or a log writer of its own."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import scribe
from helpers import SCRIBE, as_a_person, events_of, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block, tool_use_block
from scribe.log.events import InterruptEvent, ToolResultEvent, UserEvent

FIRST, SECOND = "write the greeting with a command", "now tell me a long story"
COMMAND = "echo hello > greeting.txt && cat greeting.txt"
STORY = "Once upon a time " * 40


def script() -> list[Any]:
    """A command that asks (accept-edits asks before commands), its answer, then a story whose
    stream freezes mid-answer until it is cancelled."""
    return [
        Reply([text_block("Writing it."), tool_use_block("run_command", {"command": COMMAND}, id="toolu_cmd")]),
        Reply.text("Wrote greeting.txt."),
        Fault(kind="stall", after_events=5, reply=Reply.text(STORY), hang_s=30),
    ]


def check_the_session(workspace: Path, server: FakeMessagesServer) -> None:
    """What both front ends must have done: the same requests, the same log."""
    assert (workspace / "greeting.txt").read_text() == "hello\n"
    requests = [r.json for r in server.requests if r.status == 200]
    assert len(requests) == 3
    assert requests[0]["messages"][-1]["content"][-1]["text"] == FIRST
    result = requests[1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_cmd" and "hello" in result["content"]
    assert requests[2]["messages"][-1]["content"][-1]["text"] == SECOND
    [log] = session_logs(workspace)
    events = events_of(log)
    assert [e.text for e in events if isinstance(e, UserEvent)] == [FIRST, SECOND]
    [ran] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert ran.extra["permission"] == "approved" and ran.exit_code == 0
    assert isinstance(events[-1], InterruptEvent) and events[-1].seq > [e for e in events if isinstance(e, UserEvent)][-1].seq


class Lines:
    """The stream-json lines of a running `scribe run`, read in a thread as they come."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.seen: list[dict[str, Any]] = []
        self._new = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._new:
                self.seen.append(json.loads(line))
                self._new.notify_all()

    def wait_for(self, wanted: Any, timeout: float = 60) -> dict[str, Any]:
        """The first line not yet waited for that `wanted` accepts."""
        with self._new:
            start = getattr(self, "_from", 0)
            found = self._new.wait_for(lambda: next((i for i, line in enumerate(self.seen[start:], start)
                                                     if wanted(line)), None) is not None, timeout)
            assert found, f"no such line in {self.seen}"
            index = next(i for i, line in enumerate(self.seen[start:], start) if wanted(line))
            self._from = index + 1
            return self.seen[index]

    def send(self, record: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(record) + "\n")
        self.proc.stdin.flush()


def test_a_session_over_stream_json_on_stdin(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(script()) as server:
        proc = subprocess.Popen([SCRIBE, "run", "--input-format", "stream-json", "--output-format", "stream-json",
                                 "-p", "accept-edits"], cwd=workspace, env=scribe_env(server.base_url, home),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = Lines(proc)
        try:
            init = lines.wait_for(lambda line: line["type"] == "system" and line["subtype"] == "init")
            assert init["permissionMode"] == "acceptEdits" and "run_command" in init["tools"]
            lines.send({"type": "user", "message": {"role": "user", "content": FIRST}})
            asked = lines.wait_for(lambda line: line["type"] == "control_request")
            assert asked["request"]["subtype"] == "can_use_tool" and asked["request"]["tool_name"] == "run_command"
            assert asked["request"]["input"] == {"command": COMMAND}
            assert not (workspace / "greeting.txt").exists()  # nothing ran before the answer
            lines.send({"type": "control_response", "response": {"subtype": "success",
                                                                 "request_id": asked["request_id"],
                                                                 "response": {"behavior": "allow"}}})
            tool = lines.wait_for(lambda line: line["type"] == "user")
            assert tool["message"]["content"][0]["tool_use_id"] == "toolu_cmd"
            first = lines.wait_for(lambda line: line["type"] == "result")
            assert first["subtype"] == "success" and first["result"] == "Wrote greeting.txt." and first["num_turns"] == 2

            lines.send({"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": SECOND}]}})
            lines.wait_for(lambda line: line["type"] == "stream_event")  # the story has begun, then froze
            lines.send({"type": "control_request", "request_id": "stop-1", "request": {"subtype": "interrupt"}})
            lines.wait_for(lambda line: line["type"] == "control_response"
                           and line["response"]["request_id"] == "stop-1")
            second = lines.wait_for(lambda line: line["type"] == "result")
            assert second["subtype"] == "error_interrupted" and second["stop_reason"] == "interrupted"
            assert proc.stdin is not None
            proc.stdin.close()  # the end of the input ends the session
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
            proc.wait()
        check_the_session(workspace, server)
    assert {line.get("session_id") for line in lines.seen if line["type"] != "control_response"} == {init["session_id"]}


@pytest.fixture
def person(monkeypatch: pytest.MonkeyPatch, workspace: Path, tmp_path: Path) -> Iterator[None]:
    as_a_person(monkeypatch, workspace, tmp_path / "home")
    yield


def test_the_same_session_through_the_python_api(workspace: Path, person: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeMessagesServer(script()) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        with scribe.open_session(workspace, permission_mode="accept-edits") as session:
            asked = []
            for event in session.send(FIRST):
                if isinstance(event, scribe.ApprovalRequested):
                    asked.append(event)
                    assert not (workspace / "greeting.txt").exists()
                    session.answer(event, scribe.Decision.ALLOW)
            assert [a.call.args for a in asked] == [{"command": COMMAND}]
            assert session.result is not None and session.result.text == "Wrote greeting.txt."
            kinds = []
            for event in session.send(SECOND):
                kinds.append(type(event).__name__)
                if isinstance(event, scribe.TextDelta):
                    session.cancel()  # held by this loop: the core throws it in where it yielded
            assert session.result is not None and session.result.reason == "interrupted"
            assert kinds[-1] == "TurnEnded" and "TextDelta" in kinds
        check_the_session(workspace, server)


def test_the_async_api_cancels_from_another_task(workspace: Path, person: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    async def converse() -> list[str]:
        seen: list[str] = []
        async with scribe.open_async_session(workspace, permission_mode="accept-edits") as session:
            async for event in session.send(FIRST):
                if isinstance(event, scribe.ApprovalRequested):
                    session.answer(event, "allow")
            async for event in session.send(SECOND):
                seen.append(type(event).__name__)
                if isinstance(event, scribe.TextDelta) and seen.count("TextDelta") == 1:
                    # from the event loop, while the core waits on the frozen stream in its thread
                    asyncio.get_running_loop().call_later(0.2, session.cancel)
            assert session.result is not None and session.result.reason == "interrupted"
        return seen

    with FakeMessagesServer(script()) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        seen = asyncio.run(converse())
        check_the_session(workspace, server)
    assert seen[-1] == "TurnEnded"


FRONT_ENDS = ["cli/run.py", "cli/repl/repl.py", "api/session.py", "cli/demo.py", "cli/reflect.py", "cli/notes.py"]
# What only the core opens: a front end that names one of these made its own.
OWN = {"ModelClient", "McpHub", "LogWriter", "open_hub", "start_session", "open_session", "assemble"}


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_no_front_end_opens_a_client_a_hub_or_a_log_writer_of_its_own(front_end: str) -> None:
    """Every front end reaches the model, the servers and the log through the core (agent/core.py)."""
    root = Path(scribe.__file__).parent
    tree = ast.parse((root / front_end).read_text(encoding="utf-8"))
    imported = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    called = {node.func.id if isinstance(node.func, ast.Name) else node.func.attr
              for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Name | ast.Attribute)}
    assert not (imported | called) & OWN
    assert "Agent" in imported  # the core
