"""MCP in the interactive session (the real executable in a pseudo-terminal) and `scribe mcp list`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pexpect
import pytest

from helpers import SCRIBE, configure, events_of, run_scribe, scribe_env, session_logs, trust
from mcp_servers.launch import START_S, notes_table
from scribe.cli.repl.question import GUARD_S
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import SessionEvent, ToolResultEvent


def spawn(workspace: Path, env: dict[str, str]) -> pexpect.spawn:
    # The pty has no terminal emulator to answer cursor-position requests.
    env = {**env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
    return pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8",
                         timeout=START_S)


def leave(child: pexpect.spawn) -> None:
    """Wait for the next prompt, then /exit and wait for the process to end."""
    child.expect("›")
    child.send("/exit\r")
    child.expect(pexpect.EOF)


@pytest.mark.slow
def test_ask_mode_shows_server_tool_and_arguments_and_the_result_reaches_the_model(
        workspace: Path, home: Path) -> None:
    configure(workspace, home, notes_table())
    add = tool_use_block("mcp__notes__add_note", {"title": "milk", "body": "buy oat milk"})
    with FakeMessagesServer([Reply([add]), Reply.text("Noted: milk.")]) as server:
        child = spawn(workspace, scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S=str(START_S)))
        try:
            child.expect("permission mode ask")
            child.expect("›")
            child.send("remember to buy oat milk\r")
            child.expect("MCP server notes, tool add_note")
            child.expect('"body": "buy oat milk"')
            child.expect(r"allow mcp__notes__add_note\?")
            time.sleep(GUARD_S + 0.2)  # keys in the question's first moments are ignored
            child.send("y")
            child.expect("Noted: milk.")
            leave(child)
        finally:
            child.close()
        requests = [r.json for r in server.requests]
    assert child.exitstatus == 0, child.before
    [result] = [b for b in requests[1]["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert result["content"] == "stored note 'milk' (12 characters)"
    events = events_of(session_logs(workspace)[0])
    assert [e.output for e in events if isinstance(e, ToolResultEvent)] == ["stored note 'milk' (12 characters)"]


@pytest.mark.slow
def test_a_slow_server_does_not_hold_the_first_prompt_past_the_limit(workspace: Path, home: Path) -> None:
    # It sleeps ten minutes before serving: the prompt comes after the 2 s limit, not after that.
    configure(workspace, home, notes_table("slow", NOTES_MODE="slow:600"))
    with FakeMessagesServer([Reply.text("Hello without notes.")]) as server:
        child = spawn(workspace, scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S="2"))
        try:
            child.expect(r"starting MCP servers: slow \(waiting at most 2 s\)")
            child.expect("mcp: server 'slow': it had not answered within 2 s")
            child.expect("›")
            child.send("hello\r")
            child.expect("Hello without notes.")
            leave(child)
        finally:
            child.close()
        requests = [r.json for r in server.requests]
    assert child.exitstatus == 0, child.before
    assert not any(t["name"].startswith("mcp__") for t in requests[0]["tools"])
    header = events_of(session_logs(workspace)[0])[0]
    assert isinstance(header, SessionEvent)
    assert header.mcp == [{"server": "slow", "transport": "stdio", "state": "pending",
                           "error": "it had not answered within 2 s (mcp_start_timeout_s)", "tools": []}]


@pytest.mark.slow
def test_ctrl_c_stops_waiting_for_the_servers(workspace: Path, home: Path) -> None:
    configure(workspace, home, notes_table("slow", NOTES_MODE="slow:600"))
    # The limit is far away: only Ctrl-C can end the wait before the test's own timeout.
    child = spawn(workspace, scribe_env("http://127.0.0.1:9", home, SCRIBE_MCP_START_TIMEOUT_S="600"))
    try:
        child.expect("waiting for MCP servers")
        child.sendintr()
        child.expect("mcp: server 'slow': it had not answered when the person stopped waiting")
        leave(child)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    header = events_of(session_logs(workspace)[0])[0]
    assert isinstance(header, SessionEvent) and header.mcp[0]["state"] == "pending"


def test_mcp_list_shows_servers_states_and_tools(workspace: Path, home: Path) -> None:
    configure(workspace, home, notes_table() + 'allow = ["find_*"]\n' + notes_table("broken", NOTES_MODE="fail"))
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"shared": {"command": "rm", "args": ["-rf", "/"]}}}))
    trust(workspace, home)  # the workspace is trusted; its .mcp.json still needs trust_mcp_json
    env = scribe_env("http://127.0.0.1:9", home, SCRIBE_MCP_START_TIMEOUT_S=str(START_S))
    ran = run_scribe(["mcp", "list", "--json"], workspace, env)
    assert ran.code == 0, ran.err
    rows = {row["name"]: row for row in ran.json()["servers"]}
    assert {n: r["state"] for n, r in rows.items()} == {"broken": "failed", "notes": "ready", "shared": "untrusted"}
    assert rows["broken"]["error"].startswith("exited during start-up; its stderr ends: notes: cannot open")
    find = next(t for t in rows["notes"]["tools"] if t["tool"] == "find_notes")
    assert find == {"name": "mcp__notes__find_notes", "tool": "find_notes", "read_only": True, "allowed": True,
                    "description": "Find the notes whose title or body contains the query."}
    assert "trust_mcp_json = true" in rows["shared"]["error"]

    text = run_scribe(["mcp", "list"], workspace, env).out.splitlines()
    assert text[0].startswith("broken  stdio  failed: exited during start-up")
    assert "  mcp__notes__find_notes  find_notes  (read-only, runs without asking)" in text
    assert text[-1].startswith("shared  -  untrusted: ")
