"""A trusted MCP server's faulty answers fail their own call, at once, and nothing after them:
malformed JSON-RPC, a line that is not JSON-RPC at all, an answer of 50 MB. Through the real
executable, with a real server (the SDK's, tests/mcp_servers/notes.py) whose answers are written
wrong on purpose. (Each was an 8 s timeout; after the 50 MB one, quick calls timed out too.)"""

from __future__ import annotations

from pathlib import Path

from helpers import configure, events_of, run_scribe, scribe_env, session_logs
from mcp_servers.launch import START_S, notes_table
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import ToolResultEvent
from scribe.tools.mcp.stdio import MAX_MESSAGE_BYTES
from scribe.tools.textio import human_bytes

CALL_TIMEOUT = "8"


def test_malformed_junk_and_oversized_answers_fail_their_call_alone(workspace: Path, home: Path) -> None:
    configure(workspace, home, notes_table(NOTES_FAULTS="1"))
    calls = [("malformed", {}), ("find_notes", {"query": "first"}), ("junk", {}), ("huge", {}),
             ("add_note", {"title": "after", "body": "the big one"}), ("find_notes", {"query": "big"})]
    script = [Reply([tool_use_block(f"mcp__notes__{name}", args)]) for name, args in calls]
    with FakeMessagesServer([*script, Reply.text("All answered.")]) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S=str(START_S),
                         SCRIBE_MCP_CALL_TIMEOUT_S=CALL_TIMEOUT)
        ran = run_scribe(["run", "-p", "full-auto", "use the notes"], workspace, env, process=True, timeout=600)
    assert ran.code == 0, ran.err
    assert "All answered." in ran.out and "Traceback" not in ran.err
    results = {e.tool_use_id: e for e in events_of(session_logs(workspace)[-1]) if isinstance(e, ToolResultEvent)}
    by_call = [results[block.blocks[0]["id"]] for block in script]
    malformed, first, junk, huge, added, found = by_call
    assert all("did not answer within" not in r.output for r in by_call), [r.output for r in by_call]
    # JSON whose id is the call's: an error at once, saying what was wrong
    assert malformed.is_error and malformed.output.startswith(
        "MCP server 'notes': the server's answer is not valid JSON-RPC (")
    assert '`{"jsonrpc": "2.0", "id": ' in malformed.output and '"result": "not an object"' in malformed.output
    assert not first.is_error and first.output == "no note matches 'first'"  # its late real answer was dropped
    # not JSON at all, and no answer: an error once the grace for a real answer is over
    assert junk.is_error and junk.output == (
        "MCP server 'notes': it wrote what is not JSON-RPC on stdout: `oops: the server printed this instead`; "
        "no answer followed")
    # 50 MB: dropped as it is read, its call told how large it was; the calls after it as quick as ever
    assert huge.is_error and huge.output.startswith("MCP server 'notes': the server's answer was ")
    assert f"over the {human_bytes(MAX_MESSAGE_BYTES)} scribe reads of one answer; it was dropped" in huge.output
    assert not added.is_error and added.output.startswith("stored note 'after'")
    assert not found.is_error and found.output == "after: the big one"
