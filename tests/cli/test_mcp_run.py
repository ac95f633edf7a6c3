"""MCP tools end to end: the real `scribe` executable, a real MCP server process (written with
the SDK) over stdio and streamable HTTP, and the real Anthropic SDK against the fake API."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from helpers import configure, events_of, run_scribe, scribe_env, session_logs, trust
from mcp_servers.launch import START_S, notes_over_http, notes_table
from mcp_servers.tiny_png import png_bytes
from scribe.context.render import canonical_json, render
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, SessionEvent, ToolResultEvent
from scribe.tools.registry import builtin_tools

BUILTINS = [t.name for t in builtin_tools()] + ["task"]  # a new session offers sub-agents
NOTES_V1 = ["mcp__notes__add_note", "mcp__notes__find_notes", "mcp__notes__chart", "mcp__notes__big",
            "mcp__notes__crash", "mcp__notes__exit_soon", "mcp__notes__hang", "mcp__notes__garble"]




def tool_results(message: dict) -> dict[str, dict]:
    return {b["tool_use_id"]: b for b in message["content"] if b["type"] == "tool_result"}


def test_a_tool_is_listed_called_answered_logged_and_pinned_across_continue(workspace: Path, home: Path) -> None:
    configure(workspace, home, notes_table(NOTES_VARIANT="${NOTES_VARIANT:-v1}", NOTES_MODE="${NOTES_MODE:-}"))
    add = tool_use_block("mcp__notes__add_note", {"title": "milk", "body": "buy oat milk"})
    find = tool_use_block("mcp__notes__find_notes", {"query": "oat"})
    chart = tool_use_block("mcp__notes__chart", {"title": "sales"})
    again = tool_use_block("mcp__notes__add_note", {"title": "eggs", "body": "a dozen"})
    down = tool_use_block("mcp__notes__find_notes", {"query": "eggs"})
    script = iter([Reply([text_block("Storing it."), add]), Reply([find, chart]), Reply.text("Stored and drawn."),
                   Reply([again]), Reply.text("That tool is gone from the server now."),
                   Reply([down]), Reply.text("The notes server is down.")])

    def answer(request: dict) -> Reply:
        if "tool_choice" in request:  # memory compression, forcing its tool: observing the turns that have paid for it
            return Reply.text("🔴 The user keeps grocery notes in the notes MCP server.")
        return next(script)

    with FakeMessagesServer(answer) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S=str(START_S))
        first = run_scribe(["run", "-p", "full-auto", "note that I need oat milk, then chart sales"], workspace, env)
        assert first.code == 0, first.err
        # The server is upgraded: add_note is gone, find_notes takes another argument.
        second = run_scribe(["run", "-c", "-p", "full-auto", "and eggs"], workspace, {**env, "NOTES_VARIANT": "v2"})
        assert second.code == 0, second.err
        # ... and then it cannot start at all.
        third = run_scribe(["run", "-c", "-p", "full-auto", "find eggs"], workspace, {**env, "NOTES_MODE": "fail"})
        assert third.code == 0, third.err
        # The agent's calls: side calls also carry a tool, but always force it (tool_choice).
        agent_calls = [r for r in server.requests if r.json.get("tools") and "tool_choice" not in r.json]
        requests = [r.json for r in agent_calls]
        billed = [r.usage for r in agent_calls]
    assert "Stored and drawn." in first.out and "Traceback" not in first.err + second.err + third.err
    assert len(requests) == 7 and all(r.status == 200 for r in server.requests)

    # listed: after the built-in tools, in the server's order, with the server's own schema
    tools = requests[0]["tools"]
    assert [t["name"] for t in tools] == BUILTINS + NOTES_V1
    find_def = next(t for t in tools if t["name"] == "mcp__notes__find_notes")
    assert find_def["description"] == "Find the notes whose title or body contains the query."
    assert find_def["input_schema"]["properties"]["query"]["type"] == "string"
    assert find_def["input_schema"]["required"] == ["query"]

    # called, and the results reached the model: text, and the image as an image block
    assert tool_results(requests[1]["messages"][-1])[add["id"]]["content"] == "stored note 'milk' (12 characters)"
    results = tool_results(requests[2]["messages"][-1])
    assert results[find["id"]]["content"] == "milk: buy oat milk"
    text, image = results[chart["id"]]["content"]
    assert text["text"].startswith("chart of sales\n[image image/png, ")
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": base64.b64encode(png_bytes()).decode()}}

    # --continue after the server changed, and once it is down: the same tool definitions, byte for byte
    assert all(r["tools"] == tools for r in requests[3:])
    gone = tool_results(requests[4]["messages"][-1])[again["id"]]
    assert gone["is_error"] is True and "no longer offers the tool 'add_note'" in gone["content"]
    unavailable = tool_results(requests[6]["messages"][-1])[down["id"]]
    assert unavailable["is_error"] is True and unavailable["content"].startswith(
        "MCP server 'notes' is not available: exited during start-up; its stderr ends: notes: cannot open")

    # the cache: from the second agent request on, at least 90% of the prompts is read from it
    later = billed[1:]
    prompt = sum(b["input_tokens"] + b["cache_read_input_tokens"] + b["cache_creation_input_tokens"] for b in later)
    read = sum(b["cache_read_input_tokens"] for b in later)
    assert read / prompt >= 0.90, f"cache-read share from the 2nd request on: {read / prompt:.1%}"

    # the log: verifies, records the server and the pinned tools, and rebuilds every request
    [log] = session_logs(workspace)
    events = events_of(log)
    header = events[0]
    assert isinstance(header, SessionEvent)
    assert [s["server"] for s in header.mcp] == ["notes"] and header.mcp[0]["state"] == "ready"
    assert [t["name"] for t in header.mcp[0]["tools"]] == NOTES_V1
    chart_result = next(e for e in events if isinstance(e, ToolResultEvent) and e.tool == "mcp__notes__chart")
    assert chart_result.blocks == [image]
    verified = run_scribe(["log", "verify", str(log)], workspace, env)
    assert verified.code == 0, verified.out + verified.err
    calls = [i for i, e in enumerate(events) if isinstance(e, AssistantEvent)]
    for index, sent in zip(calls, requests, strict=True):  # what `log prompt --at` renders, call by call
        assert canonical_json(render(events[:index]).body()) == canonical_json(sent), f"call at seq {index}"
    for index in (calls[0], calls[3], calls[5]):  # and the command itself, for the first call of each process
        rebuilt = run_scribe(["log", "prompt", str(log), "--at", str(events[index].seq)], workspace, env)
        assert rebuilt.out == canonical_json(requests[calls.index(index)]) + "\n"


def test_an_http_server_from_a_trusted_mcp_json(workspace: Path, home: Path) -> None:
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": "${NOTES_URL}"}}}))
    trust(workspace, home)  # the workspace, and (SCRIBE_TRUST_MCP_JSON) its .mcp.json
    find = tool_use_block("mcp__web__find_notes", {"query": "anything"})
    big = tool_use_block("mcp__web__big", {"lines": 600})
    script = [Reply([find, big]), Reply.text("Nothing there, and a long report.")]
    with notes_over_http() as url, FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home, NOTES_URL=url, SCRIBE_TRUST_MCP_JSON="1",
                         SCRIBE_MCP_START_TIMEOUT_S=str(START_S))
        # the default headless mode (accept-edits) runs a tool its server marks read-only
        ran = run_scribe(["run", "look for anything in my notes"], workspace, env)
        requests = [r.json for r in server.requests]
    assert ran.code == 0, ran.err
    assert "mcp__web__find_notes" in [t["name"] for t in requests[0]["tools"]]
    results = tool_results(requests[1]["messages"][-1])
    assert results[find["id"]]["content"] == "no note matches 'anything'" and "is_error" not in results[find["id"]]
    # a large result is shown as a preview of its head, saying how to recall the rest; the log keeps it whole
    shown = results[big["id"]]["content"]
    note, first = shown.splitlines()[:2]
    assert note.startswith("[mcp__web__big output: 600 lines, ") and first == "line 1 of the report"
    assert shown.endswith(" not shown …]\n") and "line 600 of the report" not in shown
    assert ' recall {"seq": ' in note and len(shown) < 2_500
    [kept] = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, ToolResultEvent) and "big" in e.tool]
    assert kept.output.count("\n") == 599


def test_every_failing_server_is_one_line_and_every_call_gets_a_result(workspace: Path, home: Path) -> None:
    configure(workspace, home, notes_table() + notes_table("broken", NOTES_MODE="fail")
              + notes_table("chatty", NOTES_MODE="chatty") + '[mcp.servers.missing]\ncommand = "/nonexistent/notes-server"\n')
    calls = [tool_use_block(f"mcp__notes__{name}", args) for name, args in
             (("crash", {}), ("hang", {}), ("garble", {}), ("find_notes", {"query": "q"}))]
    script = [Reply([c]) for c in calls] + [Reply.text("Survived all of it.")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S=str(START_S),
                         SCRIBE_MCP_CALL_TIMEOUT_S="2")
        ran = run_scribe(["run", "-p", "full-auto", "try the notes tools"], workspace, env)
    assert ran.code == 0, ran.err
    assert "Survived all of it." in ran.out and "Traceback" not in ran.err
    lines = ran.err.splitlines()
    assert ("scribe: mcp: server 'broken' failed: exited during start-up; its stderr ends: notes: cannot open the "
            "notes database at /nonexistent/notes.db; its tools are not in this session") in lines
    assert ("scribe: mcp: server 'missing' failed: cannot start `/nonexistent/notes-server`: No such file or "
            "directory; its tools are not in this session") in lines
    assert ("scribe: mcp: server 'chatty' failed: exited during start-up; it wrote 2 lines to stdout that are not "
            "JSON-RPC (is it an MCP server?); its tools are not in this session") in lines
    assert sum(1 for line in lines if "mcp: server" in line) == 3  # one line each, nothing else from the SDK

    events = events_of(session_logs(workspace)[0])
    results = {e.tool_use_id: e for e in events if isinstance(e, ToolResultEvent)}
    crash, hang, garble, find = (results[c["id"]] for c in calls)  # every call has its result
    assert crash.is_error and crash.output.startswith("MCP server 'notes' stopped during the call; its stderr "
                                                      "ends: notes: crashed on purpose")
    assert hang.is_error and hang.output == ("MCP server 'notes' did not answer within 2 s (mcp_call_timeout_s); "
                                             "the call was cancelled")
    assert garble.is_error and "not a valid tool result" in garble.output
    assert not find.is_error and find.output == "no note matches 'q'"  # the crashed server was started again
    # each failure is also one line on stderr, as the call happened
    assert sum(1 for line in lines if line.startswith("  ✗ MCP server 'notes'")) == 3
