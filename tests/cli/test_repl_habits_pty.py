"""The habits of test_repl_habits.py through the real `scribe` executable in a pseudo-terminal:
`@mod` and Tab attach src/scribe/models.py, `!command` runs a command the model then reads,
and `/undo` takes back the model's edit without git; a trusted workspace's own `/review`, the
model's task list on screen, and `/init` writing AGENTS.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pexpect
import pytest

from helpers import events_of, scribe_env, session_logs, spawn, trust
from scribe.cli.repl.habits import INIT_PROMPT
from scribe.fakeapi import FakeMessagesServer, Reply, ScriptItem, tool_use_block
from scribe.log.events import UndoEvent, UserEvent

MODELS = "class Model:\n    name = 'm'\n"


def agent_replies(*replies: Reply, observation: str) -> Any:
    """The agent's calls answered by `replies` in turn; a memory compression call (it carries no
    tools) by `observation`, whenever one comes."""
    script = iter(replies)

    def answer(request: dict[str, Any]) -> ScriptItem:
        return next(script) if request.get("tools") else Reply.text(observation)
    return answer


def in_terminal(server: FakeMessagesServer, workspace: Path, home: Path, mode: str) -> pexpect.spawn:
    """`scribe -p MODE` in a pseudo-terminal, at its first prompt."""
    env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
    child = spawn(["-p", mode], workspace, env)
    try:
        child.expect(f"permission mode {mode}")
        child.expect("›")
    except BaseException:
        child.close()
        raise
    return child


def responder() -> Any:
    return agent_replies(
        Reply.text("It defines one class, Model."),
        Reply([tool_use_block("edit_file", {"path": "src/scribe/models.py", "old_text": "'m'", "new_text": "'n'"})]),
        Reply.text("Renamed it, as the shell output suggested."),
        observation="🔴 the user asked about models.py")


@pytest.mark.slow
def test_at_path_bang_and_undo_in_a_real_terminal(workspace: Path, home: Path) -> None:
    (workspace / "src" / "scribe").mkdir(parents=True)
    (workspace / "src" / "scribe" / "models.py").write_text(MODELS)
    with FakeMessagesServer(responder()) as server:
        child = in_terminal(server, workspace, home, "full-auto")
        try:
            child.send("explain @mod\t please\r")  # Tab takes the one file found, menu or no menu yet
            child.expect(r"attached src/scribe/models\.py \(2 lines\)")
            child.expect("It defines one class, Model.")
            child.expect("›")
            child.send("!echo shell-said-rename\r")
            child.expect("│ shell-said-rename")
            child.expect("›")
            child.send("change it\r")
            child.expect("Renamed it")
            child.expect("›")
            assert "name = 'n'" in (workspace / "src" / "scribe" / "models.py").read_text()
            child.send("/undo\r")
            child.expect(r"restored src/scribe/models\.py")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0, child.before
    assert (workspace / "src" / "scribe" / "models.py").read_text() == MODELS
    requests = [r.json for r in server.requests if r.json.get("tools")]
    first = json.dumps(requests[0]["messages"][-1])
    assert "explain @src/scribe/models.py please" in first
    assert json.dumps('<attached file="src/scribe/models.py" lines="2">\n' + MODELS + "</attached>")[1:-1] in first
    later = json.dumps(requests[1]["messages"][-1])
    assert "$ echo shell-said-rename\\nshell-said-rename" in later and "change it" in later
    [log] = session_logs(workspace)
    events = events_of(log)
    users = [e.text for e in events if isinstance(e, UserEvent)]
    assert users[0].startswith("explain @src/scribe/models.py please\n\n<attached file=")
    assert any(isinstance(e, UndoEvent) for e in events)


REVIEW = """---
description: review a file for bugs
---
Review $1 for bugs and unclear names.
"""
PLAN = [{"text": "Read src/a.py", "status": "done"},
        {"text": "Check the names", "status": "in_progress"},
        {"text": "Say what to change", "status": "pending"}]


def habits_responder() -> Any:
    return agent_replies(
        Reply([tool_use_block("todo", {"items": PLAN})]),
        Reply.text("Looks fine, one unclear name."),
        Reply([tool_use_block("write_file", {"path": "AGENTS.md", "content": "# Agents\n\nRun `make test`.\n"})]),
        Reply.text("Wrote AGENTS.md."),
        observation="🔴 the user asked for a review")


@pytest.mark.slow
def test_a_workspace_command_the_task_list_and_init_in_a_real_terminal(workspace: Path, home: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("x = 1\n")
    command = workspace / ".scribe" / "commands" / "review.md"
    command.parent.mkdir(parents=True)
    command.write_text(REVIEW)
    trust(workspace, home)
    with FakeMessagesServer(habits_responder()) as server:
        child = in_terminal(server, workspace, home, "accept-edits")
        try:
            child.send("/review src/a.py\r")
            child.expect(r"tasks \(1 of 3 done; now: Check the names\)")
            child.expect("▶ Check the names")
            child.expect("Looks fine, one unclear name.")
            child.expect("›")
            child.send("/init\r")
            child.expect("Wrote AGENTS.md.")
            child.expect("›")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    agent_calls = [r.json for r in server.requests if r.json.get("tools")]
    first = agent_calls[0]["messages"][-1]["content"]
    assert [b["text"] for b in first if b["type"] == "text"] == ["Review src/a.py for bugs and unclear names."]
    assert "todo" in [t["name"] for t in agent_calls[0]["tools"]]
    assert (workspace / "AGENTS.md").read_text() == "# Agents\n\nRun `make test`.\n"
    [log] = session_logs(workspace)
    users = [e for e in events_of(log) if isinstance(e, UserEvent)]
    assert [u.extra.get("command", {}).get("name") for u in users] == ["review", "init"]
    assert users[1].text == INIT_PROMPT
