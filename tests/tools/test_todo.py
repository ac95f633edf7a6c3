"""The todo tool: the model's task list, a whole list per call, in the log as the call and its
result, on screen in the REPL and on the session page; one more fixed tool definition, which a
session started before it existed never gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.agent.session.start import start_session
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import SessionEvent, ToolResultEvent
from scribe.settings.values import Settings
from scribe.tools.base import ToolContext, ToolError
from scribe.tools.registry import builtin_tools, run_tool, tool_definitions
from scribe.tools.todo import Todo, TodoItem, list_text, read_items, todos_in

PLAN = [{"text": "Read the failing test", "status": "done"},
        {"text": "Fix the parser", "status": "in_progress"},
        {"text": "Run the tests", "status": "pending"}]


def test_the_list_is_read_strictly_but_in_the_spellings_models_bring() -> None:
    items = read_items([{"content": "  Ship   it ", "status": "completed"}, {"text": "b", "status": "In Progress"}])
    assert items == [TodoItem("Ship it", "done"), TodoItem("b", "in_progress")]
    for bad, said in [([{"text": "", "status": "done"}], "item 1 has no text"),
                      ([{"text": "a", "status": "later"}], "status 'later'"),
                      (["a"], "must be an object"), ([{"text": "a"}], "has no status")]:
        with pytest.raises(ToolError, match=said):
            read_items(bad)
    assert list_text(read_items(PLAN)) == ("todo list (1 of 3 done; now: Fix the parser):\n"
                                           "[x] Read the failing test\n[>] Fix the parser\n[ ] Run the tests")
    assert list_text([]) == "todo list cleared"
    out = run_tool([Todo()], "todo", {"items": "not a list"}, ToolContext(workspace=Path("/nonexistent")))
    assert out.is_error and "argument 'items' must be an array" in out.text


def test_the_items_are_in_the_log_and_on_the_page(workspace: Path, home: Path) -> None:
    script = [Reply([text_block("Planning."), tool_use_block("todo", {"items": PLAN})]),
              Reply([tool_use_block("todo", {"items": [{**PLAN[0]}, {**PLAN[1], "status": "done"},
                                                        {**PLAN[2], "status": "in_progress"}]})]),
              Reply([tool_use_block("todo", {"items": [{"text": "x", "status": "someday"}]})]),
              Reply.text("Done.")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "-p", "read-only", "fix the parser"], workspace, env)
    assert ran.code == 0, ran.err
    # a fixed definition from the session's start, in every request
    assert [t["name"] for t in server.requests[0].json["tools"]][-2:] == ["todo", "task"]
    first = server.requests[1].json["messages"][-1]["content"][0]
    assert first["content"].startswith("todo list (1 of 3 done; now: Fix the parser)")
    events = events_of(session_logs(workspace)[0])
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in results] == [False, False, True]  # allowed even in read-only
    assert "[x] Fix the parser" in results[1].output and "status 'someday'" in results[2].output
    # the list in force is the last accepted one, read from the log alone
    assert todos_in(events) == [TodoItem("Read the failing test", "done"), TodoItem("Fix the parser", "done"),
                                TodoItem("Run the tests", "in_progress")]
    shown = run_scribe(["log", "show"], workspace, env)
    assert "[>] Run the tests" in shown.out
    page = run_scribe(["log", "html", "-o", str(workspace / "page.html")], workspace, env)
    assert page.code == 0, page.err
    html = (workspace / "page.html").read_text()
    assert '<ul class="todo-list">' in html and "tasks · <bdi>2 of 3 done; now: Run the tests</bdi>" in html
    assert '<li class="todo-in_progress"><span class="mark">▶</span> <bdi>Run the tests</bdi></li>' in html


def test_the_list_is_shown_in_the_repl_and_names_the_task_at_work(workspace: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from helpers import as_a_person
    from repl_driver import run_repl

    as_a_person(monkeypatch, workspace, tmp_path / "home")
    script = [Reply([tool_use_block("todo", {"items": PLAN})]), Reply.text("On it."),
              Reply.text("unused")]
    ran = run_repl(workspace, script, "fix the parser\r/todos\r")
    out = ran.out
    assert "tasks (1 of 3 done; now: Fix the parser)" in out
    assert "✔ Read the failing test" in out and "▶ Fix the parser" in out and "☐ Run the tests" in out
    assert out.count("☐ Run the tests") == 2  # once when the model wrote it, once for /todos


def test_a_session_started_without_the_tool_keeps_the_tools_it_recorded(workspace: Path, home: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    older = [t for t in builtin_tools() if t.name != "todo"]
    start_session(workspace, Settings(), tool_definitions(older)).close()
    script = [Reply([tool_use_block("todo", {"items": PLAN})]), Reply.text("No such tool, then.")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "-c", "plan it"], workspace, env)
    assert ran.code == 0, ran.err
    assert all("todo" not in [t["name"] for t in r.json["tools"]] for r in server.requests)
    events = events_of(session_logs(workspace)[0])
    assert isinstance(events[0], SessionEvent) and "todo" not in [t["name"] for t in events[0].tools]
    [result] = [e for e in events if isinstance(e, ToolResultEvent)]
    assert result.is_error and "unknown tool 'todo'" in result.output


def test_the_todo_tool_setting_leaves_it_out_of_new_sessions(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("Hi."), Reply.text("Again.")]) as server:
        env = scribe_env(server.base_url, home, SCRIBE_TODO_TOOL="false")
        assert run_scribe(["run", "hello"], workspace, env).code == 0
        # a session keeps the tools it started with, whatever the setting says later
        assert run_scribe(["run", "-c", "again"], workspace, scribe_env(server.base_url, home)).code == 0
    names = [[t["name"] for t in r.json["tools"]] for r in server.requests]
    assert names[0] == names[1] == ["read_file", "write_file", "edit_file", "run_command", "list_files",
                                    "search_files", "recall", "task"]
