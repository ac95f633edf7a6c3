"""Sub-agents through the real SDK and the fake API: a parent answer with two task calls runs
both children at once, each in a sealed log of its own that names its parent; the parent's next
request reads its whole earlier prefix from the cache; and a child that hits max_tokens, one that
fails and one that is cancelled each come back saying what happened, with nothing of their work
missing from their logs."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import scribe
from helpers import as_a_person, events_of, run_scribe, scribe_env
from scribe.agent.session.instructions import SUBAGENT_GUIDANCE
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, InterruptEvent, SessionEvent, ToolResultEvent, UserEvent
from scribe.log.seal import authenticate_file
from scribe.log.store import SessionStore

PAD = "This repository has a long history worth knowing before you read it. " * 60  # past the cache minimum


def is_child(request: dict[str, Any]) -> bool:
    system = request.get("system") or []
    text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    return text.startswith(SUBAGENT_GUIDANCE)


def asked(request: dict[str, Any]) -> str:
    first = request["messages"][0]["content"]
    return first if isinstance(first, str) else " ".join(b.get("text", "") for b in first if b.get("type") == "text")


class Model:
    """The parent hands two files to two sub-agents at once; each child reads its file, then
    answers with what it found. Each child's answer takes a while, so two that run at once
    overlap."""

    def __init__(self, child_reply: Any = None) -> None:
        self.spans: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        self.child_reply = child_reply

    def __call__(self, request: dict[str, Any]) -> Any:
        if is_child(request):
            task = asked(request)
            which = "a.txt" if "a.txt" in task else "b.txt"
            last = request["messages"][-1]["content"]
            if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
                if self.child_reply is not None:
                    return self.child_reply(which)
                return Reply.text(f"{which} says: " + ("alpha" if which == "a.txt" else "beta"))
            with self.lock:
                self.spans.setdefault(which, []).append(time.monotonic())
            time.sleep(0.6)
            with self.lock:
                self.spans[which].append(time.monotonic())
            return Reply([tool_use_block("read_file", {"path": which})])
        last = request["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Reply.text("Both files read.")
        return Reply([text_block("Two sub-agents, one file each. " + PAD),
                      tool_use_block("task", {"description": "read a", "prompt": "Read a.txt and say what it says."}),
                      tool_use_block("task", {"description": "read b", "prompt": "Read b.txt and say what it says."})])


@pytest.fixture
def files(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    return workspace


def test_two_task_calls_run_two_children_at_once_each_in_a_sealed_log_naming_its_parent(
        files: Path, home: Path) -> None:
    model = Model()
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "-o", "json", "read both files with sub-agents"], files, env)
        assert ran.code == 0, ran.err
        stats = run_scribe(["log", "stats", "--json", ran.json()["session_id"]], files, env)
        listed = run_scribe(["log", "list", "--json"], files, env).json()
    parent_id = ran.json()["session_id"]
    # both children's first requests overlap in time
    (a_start, a_end), (b_start, b_end) = model.spans["a.txt"], model.spans["b.txt"]
    assert a_start < b_end and b_start < a_end
    store = SessionStore(files / ".scribe")
    parent_log = store.find(parent_id, files).path
    parent_events = events_of(parent_log)
    results = [e for e in parent_events if isinstance(e, ToolResultEvent)]
    assert [r.tool for r in results] == ["task", "task"]
    assert {r.output for r in results} == {"a.txt says: alpha", "b.txt says: beta"}
    children = {r.child["session"]: r for r in results}
    for child_id, result in children.items():
        log = store.find(child_id, files).path
        assert authenticate_file(log).ok
        header = events_of(log)[0]
        assert isinstance(header, SessionEvent)
        assert header.parent == {"session": parent_id, "tool_use_id": result.tool_use_id, "agent": "general"}
        assert "task" not in [t["name"] for t in header.tools]  # a child hands nothing further on
        users = [e for e in events_of(log) if isinstance(e, UserEvent)]
        assert users[0].text == next(
            b["input"]["prompt"] for e in parent_events if isinstance(e, AssistantEvent)
            for b in e.content if b.get("type") == "tool_use" and b["id"] == result.tool_use_id)
    # the parent's next request reads its whole earlier prefix from the cache
    parents = [r for r in server.requests if not is_child(r.json)]
    first, second = parents[0].usage, parents[1].usage
    assert first is not None and second is not None
    assert second["cache_read_input_tokens"] >= first["input_tokens"] + first["cache_creation_input_tokens"] \
        + first["cache_read_input_tokens"]
    # children of one kind share a cached prefix: the second child's first request reads the first's
    child_firsts = [r.usage for r in server.requests if is_child(r.json) and len(r.json["messages"]) == 1]
    assert any(u is not None and u["cache_read_input_tokens"] > 0 for u in child_firsts) or len(child_firsts) == 2
    # log list: each child right under its parent, naming it
    assert [r["parent"] for r in listed] == [None, parent_id, parent_id]
    assert listed[0]["id"] == parent_id and {r["id"] for r in listed[1:]} == set(children)
    # log stats of the parent: each child's cost, and the total with them
    report = stats.json()
    kids = {c["session_id"]: c for c in report["children"]}
    assert set(kids) == set(children)
    assert all(c["usage"]["calls"] == 2 and c["usage"]["cost_usd"] > 0 for c in kids.values())
    own = report["total"]["cost_usd"]
    # each figure is rounded to the millionth of a dollar in the JSON: three roundings apart at most
    assert report["with_children"]["cost_usd"] == pytest.approx(own + sum(c["usage"]["cost_usd"] for c in kids.values()),
                                                                abs=1.5e-6)


@pytest.mark.parametrize("how", ["max_tokens", "error"])
def test_a_child_that_stops_returns_what_it_has_and_where_its_log_is(files: Path, home: Path, how: str) -> None:
    def reply(which: str) -> Any:
        if how == "max_tokens":
            return Reply([text_block(f"{which} begins with alph")], stop_reason="max_tokens")
        return Fault(status=400, message="the child's request was refused")

    model = Model(reply)
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MAX_RETRIES="0")
        ran = run_scribe(["run", "-o", "json", "read both files with sub-agents"], files, env)
    assert ran.code == 0, ran.err
    store = SessionStore(files / ".scribe")
    results = [e for e in events_of(store.find(ran.json()["session_id"], files).path)
               if isinstance(e, ToolResultEvent)]
    for result in results:
        child = result.child
        assert result.is_error and child["reason"] == how
        said = "it reached max_tokens" if how == "max_tokens" else "the sub-agent failed"
        assert said in result.output and f"session {child['session']}" in result.output
        assert "read_file" in result.output  # what it did
        if how == "max_tokens":
            assert "begins with alph" in result.output  # what it had written
        child_events = events_of(store.find(child["session"], files).path)
        assert any(isinstance(e, ToolResultEvent) and e.tool == "read_file" for e in child_events)


def test_a_cancel_reaches_the_children_and_each_says_it_was_cancelled(
        files: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    as_a_person(monkeypatch, files, tmp_path / "home")

    def stall(which: str) -> Any:
        return Fault(kind="stall", after_events=3, reply=Reply.text("Reading on and on " * 20), hang_s=30)

    model = Model(stall)
    with FakeMessagesServer(model) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        with scribe.open_session(files, permission_mode="accept-edits") as session:
            started = 0
            for event in session.send("read both files with sub-agents"):
                if isinstance(event, scribe.SubagentEvent) and isinstance(event.event, scribe.ToolCall):
                    started += 1
                    if started == 2:  # both children have read their file and wait on their answer
                        threading.Timer(0.3, session.cancel).start()
            assert session.result is not None and session.result.reason == "interrupted"
            log = session.log
    events = events_of(log)
    results = [e for e in events if isinstance(e, ToolResultEvent) and e.tool == "task"]
    assert len(results) == 2
    for result in results:
        assert "the sub-agent was cancelled" in result.output and "read_file" in result.output
        child_events = events_of(SessionStore(files / ".scribe").find(result.child["session"], files).path)
        assert any(isinstance(e, InterruptEvent) for e in child_events)
        assert any(isinstance(e, ToolResultEvent) and e.tool == "read_file" for e in child_events)
    assert any(isinstance(e, InterruptEvent) for e in events)


def test_the_parent_reads_a_childs_log_back_with_recall(files: Path, home: Path) -> None:
    """A child that stopped says where its log is; `recall` with its session reads it back, and
    refuses a session that is not one of this session's sub-agents."""
    import re

    def cut(which: str) -> Any:
        return Reply([text_block(f"{which} begins with alph")], stop_reason="max_tokens")

    class Recalling(Model):
        def __call__(self, request: dict[str, Any]) -> Any:
            if is_child(request):
                return super().__call__(request)
            last = request["messages"][-1]["content"]
            results = [b for b in last if b.get("type") == "tool_result"]
            if results and "session" in str(results[0].get("content")):
                child = re.search(r"session (\d{8}-\d{6}-[0-9a-f]+)", str(results[0]["content"]))
                assert child is not None
                return Reply([tool_use_block("recall", {"session": child.group(1), "query": "read_file"}),
                              tool_use_block("recall", {"session": "20000101-000000-abcdef", "query": "x"})])
            if results:
                return Reply.text("Read its log.")
            return super().__call__(request)

    with FakeMessagesServer(Recalling(cut)) as server:
        ran = run_scribe(["run", "-o", "json", "read both files with sub-agents"], files,
                         scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    results = [e for e in events_of(SessionStore(files / ".scribe").find(ran.json()["session_id"], files).path)
               if isinstance(e, ToolResultEvent) and e.tool == "recall"]
    assert len(results) == 2
    assert "read_file" in results[0].output and not results[0].is_error
    assert results[1].is_error and "no sub-agent session" in results[1].output
