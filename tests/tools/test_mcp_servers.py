"""The hub against real MCP server processes (tests/mcp_servers/notes.py, written with the SDK),
over stdio and streamable HTTP: listing, calls, every way a server fails, and the agent loop's
permission modes for MCP tools."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import agent_for
from mcp_servers.launch import NOTES, START_S, free_port, notes_over_http
from scribe.agent.loop import TurnLoop
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import ToolResultEvent
from scribe.settings.values import Settings
from scribe.tools.base import CommandInterrupted, ToolContext
from scribe.tools.mcp.hub import McpHub
from scribe.tools.mcp.link import McpCallError
from scribe.tools.mcp.spec import ServerSpec
from scribe.tools.mcp.tool import McpTool


def notes_spec(name: str = "notes", **env: str) -> ServerSpec:
    return ServerSpec(name, "stdio", "test", command=sys.executable, args=(NOTES,), env=dict(env),
                      allow=("add_*",))


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHub]:
    """One notes server over stdio for the module's tests (they leave it running, or restartable)."""
    root = tmp_path_factory.mktemp("mcp-hub")
    with McpHub([notes_spec()], root, log_dir=root / "logs", start_timeout_s=START_S, call_timeout_s=30) as hub:
        hub.start()
        hub.wait()
        yield hub


def test_a_stdio_server_lists_its_tools_and_answers_calls(hub: McpHub) -> None:
    [state] = hub.states()
    assert state.state == "ready", state.error
    names = [t.name for t in state.tools]
    assert names[:3] == ["mcp__notes__add_note", "mcp__notes__find_notes", "mcp__notes__chart"]
    assert {t.tool: t.read_only for t in state.tools}["find_notes"] is True
    assert hub.call("notes", "add_note", {"title": "milk", "body": "buy oat milk"})["content"] == [
        {"type": "text", "text": "stored note 'milk' (12 characters)"}]
    found = hub.call("notes", "find_notes", {"query": "oat"})
    assert found["content"][0]["text"] == "milk: buy oat milk" and not found["isError"]
    chart = hub.call("notes", "chart", {"title": "sales"})["content"]
    assert [c["type"] for c in chart] == ["text", "image"] and chart[1]["mimeType"] == "image/png"


def test_an_unknown_tool_and_bad_arguments_come_back_as_errors_from_the_server(hub: McpHub) -> None:
    with pytest.raises(McpCallError, match="no longer offers the tool 'delete_all'"):
        hub.call("notes", "delete_all", {})
    result = hub.call("notes", "find_notes", {"query": 3})
    assert result["isError"] is True


def test_a_server_crashing_mid_call_is_an_error_and_the_next_call_starts_it_again(hub: McpHub) -> None:
    with pytest.raises(McpCallError) as caught:
        hub.call("notes", "crash", {})
    assert str(caught.value) == ("MCP server 'notes' stopped during the call; its stderr ends: notes: crashed on "
                                 "purpose; scribe starts it again at the next call")
    assert hub.call("notes", "find_notes", {"query": "x"})["content"][0]["text"] == "no note matches 'x'"


def test_a_server_that_exits_while_idle_is_restarted_before_the_next_call(hub: McpHub) -> None:
    assert hub.call("notes", "exit_soon", {})["content"][0]["text"] == "bye"
    deadline = time.monotonic() + 10
    while hub.states()[0].state == "ready" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hub.states()[0].state == "failed" and "it exited" in (hub.states()[0].error or "")
    assert not hub.call("notes", "find_notes", {"query": "y"})["isError"]  # not sent into the void


def test_a_hanging_call_times_out_with_one_line(hub: McpHub) -> None:
    with pytest.raises(McpCallError, match=r"^MCP server 'notes' did not answer within 1 s \(mcp_call_timeout_s\); "
                                           "the call was cancelled$"):
        hub.call("notes", "hang", {}, timeout_s=1)


def test_ctrl_c_during_a_call_cancels_it_and_gives_it_a_result(hub: McpHub, workspace: Path) -> None:
    hang = McpTool(hub, "notes", next(t for t in hub.states()[0].tools if t.tool == "hang"))
    interrupt = threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGINT))  # a real Ctrl-C
    interrupt.start()
    try:
        with pytest.raises(CommandInterrupted) as caught:
            hang.run({}, ToolContext(workspace=workspace))
    finally:
        interrupt.cancel()
    assert caught.value.output.is_error
    assert caught.value.output.text == "[cancelled by the user: the call to hang on MCP server 'notes' was stopped]"
    assert not hub.call("notes", "find_notes", {"query": "z"})["isError"]  # the server goes on


def test_an_answer_that_is_not_an_mcp_result_is_an_error(hub: McpHub) -> None:
    with pytest.raises(McpCallError, match="answered with something that is not a valid tool result: "
                                           "CallToolResult.content: Input should be a valid list"):
        hub.call("notes", "garble", {})


@pytest.fixture(scope="module")
def faulty_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHub]:
    """A notes server whose `deep` and `endless` tools answer in ways no call should wait out. Its
    calls may take 30 s: what is asserted is the error each gets, never the timeout's."""
    root = tmp_path_factory.mktemp("mcp-faulty")
    with McpHub([notes_spec(NOTES_FAULTS="1")], root, log_dir=root / "logs", start_timeout_s=START_S,
                call_timeout_s=30) as hub:
        hub.start()
        hub.wait()
        yield hub


def test_an_answer_nested_too_deep_to_parse_fails_its_call_at_once(faulty_hub: McpHub) -> None:
    """200,000 nested brackets: the JSON reader refuses it and Python's own would overflow its
    stack; the call is told so, not left to its timeout."""
    with pytest.raises(McpCallError, match=r"^MCP server 'notes': the server's answer is nested too deeply to read "
                                           r"\(Invalid JSON: recursion limit exceeded.*\); it was dropped$"):
        faulty_hub.call("notes", "deep", {})
    assert faulty_hub.call("notes", "find_notes", {"query": "q"})["content"][0]["text"] == "no note matches 'q'"


def test_an_answer_too_long_without_a_line_end_fails_its_call_at_once(faulty_hub: McpHub) -> None:
    """40 MB and no line end, then silence: the call fails once its bytes stop coming, not at the
    end of a line that never ends, nor at its timeout."""
    with pytest.raises(McpCallError, match=r"^MCP server 'notes': the server's answer passed the 16.0 MB scribe "
                                           r"reads of one answer, then stopped with no line end \(\d+\.\d MB so "
                                           r"far\); it was dropped$"):
        faulty_hub.call("notes", "endless", {})


def test_servers_that_cannot_start_each_say_why(tmp_path: Path) -> None:
    specs = [notes_spec("broken", NOTES_MODE="fail"), ServerSpec("missing", "stdio", "t", command="/nonexistent/x"),
             ServerSpec("web", "http", "t", url=f"http://127.0.0.1:{free_port()}/mcp")]
    with McpHub(specs, tmp_path, log_dir=tmp_path / "logs", start_timeout_s=START_S) as hub:
        hub.start()
        states = {s.name: s for s in hub.wait()}
        assert {n: s.state for n, s in states.items()} == {"broken": "failed", "missing": "failed", "web": "failed"}
        assert states["broken"].error == ("exited during start-up; its stderr ends: notes: cannot open the notes "
                                          "database at /nonexistent/notes.db")
        assert states["missing"].error == "cannot start `/nonexistent/x`: No such file or directory"
        assert states["web"].error.startswith(f"cannot connect to {specs[2].url}")
        with pytest.raises(McpCallError, match="MCP server 'broken' is not available: exited during start-up"):
            hub.call("broken", "find_notes", {"query": "x"})


def test_a_server_that_prints_garbage_says_so(tmp_path: Path) -> None:
    with McpHub([notes_spec("chatty", NOTES_MODE="chatty")], tmp_path, start_timeout_s=START_S) as hub:
        hub.start()
        [state] = hub.wait()
    assert (state.state, state.error) == ("failed", "exited during start-up; it wrote 2 lines to stdout that are "
                                                    "not JSON-RPC (is it an MCP server?)")


def test_a_server_that_has_not_finished_starting_is_not_waited_for_past_the_limit(tmp_path: Path) -> None:
    with McpHub([notes_spec("slow", NOTES_MODE="slow:600")], tmp_path, start_timeout_s=1.5) as hub:
        hub.start()
        [state] = hub.wait()
        assert state.state == "starting"
        with pytest.raises(McpCallError) as caught:
            hub.call("slow", "find_notes", {"query": "x"})
    assert str(caught.value) == ("MCP server 'slow' is not available: it did not finish starting within 1.5 s "
                                 "(mcp_start_timeout_s)")


def _running_in(folder: Path) -> list[int]:
    """The processes whose working folder is `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")) == folder:
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


@pytest.mark.parametrize("after_s", [0.05, 0.2])
def test_a_sandboxed_server_still_starting_when_scribe_closes_is_stopped(tmp_path: Path, after_s: float) -> None:
    """Closed while the sandbox starts it (a person's /exit right after Ctrl-C stopped the wait),
    the server used to be left running after scribe had gone: asyncio's clean-up of a start cut
    short waited on it forever."""
    from scribe.workspace.git.folders import command_protection

    protection = command_protection(tmp_path)
    if not protection.sandboxed:
        pytest.skip(f"no sandbox here: {protection.reason}")
    spec = ServerSpec("slow", "stdio", "test", command=sys.executable, args=(NOTES,),
                      env={"NOTES_MODE": "slow:600"}, owner="workspace")
    hub = McpHub([spec], tmp_path, log_dir=tmp_path / "logs", protection=protection)
    hub.start()
    time.sleep(after_s)
    hub.close()
    deadline = time.monotonic() + 5
    while _running_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_in(tmp_path) == []


@pytest.fixture
def http_server() -> Iterator[str]:
    with notes_over_http() as url:
        yield url


def test_a_streamable_http_server_lists_and_answers(http_server: str, tmp_path: Path) -> None:
    spec = ServerSpec("web", "http", "t", url=http_server, headers={"X-Trace": "scribe-test"})
    with McpHub([spec], tmp_path, start_timeout_s=START_S) as hub:
        hub.start()
        [state] = hub.wait()
        assert state.state == "ready", state.error
        assert "mcp__web__find_notes" in [t.name for t in state.tools]
        hub.call("web", "add_note", {"title": "t", "body": "over http"})
        assert hub.call("web", "find_notes", {"query": "http"})["content"][0]["text"] == "t: over http"


# -- through the agent loop ------------------------------------------------------------------------

def agent_with(hub: McpHub, server: FakeMessagesServer, workspace: Path, mode: str,
               monkeypatch: pytest.MonkeyPatch) -> TurnLoop:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    settings = Settings(permission_mode=mode, watch_files=False, curate_notes=False, mcp_start_timeout_s=START_S)
    return agent_for(workspace, settings, hub=hub)


def results_of(agent: TurnLoop) -> dict[str, ToolResultEvent]:
    return {e.tool: e for e in agent.session.events if isinstance(e, ToolResultEvent)}


@pytest.mark.parametrize("mode", ["accept-edits", "read-only"])
def test_permission_modes_decide_which_mcp_tools_run(hub: McpHub, workspace: Path, mode: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    script = [Reply([tool_use_block("mcp__notes__find_notes", {"query": "zzz"}),
                     tool_use_block("mcp__notes__add_note", {"title": "a", "body": "b"}),
                     tool_use_block("mcp__notes__garble", {})]),
              Reply.text("done")]
    with FakeMessagesServer(script) as server:
        agent = agent_with(hub, server, workspace, mode, monkeypatch)
        ended = list(agent.turn("use the notes"))[-1]
        agent.session.close()
    assert ended.reason == "end_turn"
    results = results_of(agent)
    assert results["mcp__notes__find_notes"].output == "no note matches 'zzz'"  # read-only: runs in both
    garble = results["mcp__notes__garble"]
    assert garble.is_error and "is not allowed in permission mode" in garble.output  # refused, never sent
    add = results["mcp__notes__add_note"]
    if mode == "accept-edits":  # the server's `allow` list names add_*
        assert not add.is_error and add.output.startswith("stored note 'a'")
    else:  # ... but read-only stays read-only
        assert add.is_error and "does not mark it read-only" in add.output


def test_a_signal_that_ends_scribe_during_a_call_is_named_and_carried_on(hub: McpHub, workspace: Path) -> None:
    """SIGTERM mid-call: the result says which signal stopped it, and the interrupt raised
    again once the result is logged is the signal's (so scribe exits 143), not a Ctrl-C."""
    from scribe.cli.signals import Stopped

    hang = McpTool(hub, "notes", next(t for t in hub.states()[0].tools if t.tool == "hang"))
    def stopped(signum: int, frame: object) -> None:
        raise Stopped(signum)  # as cli/signals.py turns SIGTERM into an interrupt

    previous = signal.signal(signal.SIGTERM, stopped)
    stop = threading.Timer(1.0, os.kill, args=(os.getpid(), signal.SIGTERM))
    stop.start()
    try:
        with pytest.raises(CommandInterrupted) as caught:
            hang.run({}, ToolContext(workspace=workspace))
    finally:
        stop.cancel()
        signal.signal(signal.SIGTERM, previous)
    assert caught.value.output.text == "[stopped by SIGTERM: the call to hang on MCP server 'notes' was stopped]"
    assert isinstance(caught.value.cause, Stopped) and caught.value.cause.exit_code == 143
