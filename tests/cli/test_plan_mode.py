"""Plan mode: the model reads and plans; a write and a command are refused while planning; the
plan accepted at the REPL's question switches the mode, and the next turn writes. What the model
was told of each change of mode is checked in the requests the fake API received."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import events_of, run_scribe, scribe_env, session_logs
from repl_driver import person, run_repl  # noqa: F401 - the person in the workspace, for every test here
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import ModeEvent, ToolResultEvent

PLAN = "Plan: 1. write notes.txt with the summary. 2. check it with cat."


def texts(request: dict[str, Any]) -> str:
    return " ".join(b.get("text", "") for b in request["messages"][-1]["content"] if b.get("type") == "text")


class Model:
    """Tries to write and to run a command at once; once refused, plans; once accepted, writes."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        last = request["messages"][-1]["content"]
        said = texts(request)
        if "The plan is accepted" in said:
            return Reply([tool_use_block("write_file", {"path": "notes.txt", "content": "summary\n"})])
        if any(b.get("type") == "tool_result" for b in last):
            results = [b for b in last if b.get("type") == "tool_result"]
            if any("notes.txt" in str(b.get("content")) and not b.get("is_error") for b in results):
                return Reply.text("Wrote notes.txt.")
            return Reply.text(PLAN)
        return Reply([text_block("Starting."),
                      tool_use_block("write_file", {"path": "notes.txt", "content": "too early\n"}),
                      tool_use_block("run_command", {"command": "touch ran.txt"})])


def test_plan_mode_refuses_changes_until_the_plan_is_accepted_then_writes(workspace: Path) -> None:
    model = Model()
    with FakeMessagesServer(model) as server:
        ran = run_repl(workspace, server, "/plan summarise the repo into notes.txt\ra\r", mode="ask")
        requests = [r.json for r in server.requests]
    # while planning: both refused, nothing written or run, and the model was told it plans
    assert "[Plan mode: the user wants a plan before any change." in texts(requests[0])
    events = events_of(session_logs(workspace)[0])
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    refused = results[:2]
    assert all(r.is_error and "not available while planning" in r.output for r in refused)
    assert [r.tool for r in refused] == ["write_file", "run_command"]
    assert not (workspace / "ran.txt").exists()
    # the plan, the question, the answer: accepted, carried out in accept-edits
    assert "permission mode accept-edits" in ran.out  # the answer at the question (drawn by prompt-toolkit)
    modes = [(e.previous, e.mode) for e in events if isinstance(e, ModeEvent)]
    assert modes == [("ask", "plan"), ("plan", "accept-edits")]
    accepted = next(r for r in requests if "The plan is accepted" in texts(r))
    assert "[Plan mode ended: the user accepted the plan, and the permission mode is now accept-edits." in texts(accepted)
    assert (workspace / "notes.txt").read_text() == "summary\n"
    assert not results[-1].is_error and results[-1].tool == "write_file"


def test_headless_plan_mode_prints_the_plan_and_changes_nothing(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(Model()) as server:
        ran = run_scribe(["run", "-p", "plan", "summarise the repo into notes.txt"], workspace,
                         scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert ran.out.strip().endswith(PLAN)
    assert not (workspace / "notes.txt").exists() and not (workspace / "ran.txt").exists()
