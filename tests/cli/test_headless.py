"""`scribe run` end to end: the real executable, the real SDK, the fake Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.context.render import prefix_blocks, render
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block, tool_use_block
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    ModelSwitchEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)


def coding_script() -> list[Reply]:
    """Ten model calls: write, run, read, edit, run, search, list, then answer."""
    script = [
        Reply([text_block("Creating the module."), tool_use_block("write_file", {
            "path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})]),
        Reply([tool_use_block("write_file", {
            "path": "test_calc.py", "content": "from calc import add\nassert add(2, 3) == 5\nprint('ok')\n"})]),
        Reply([tool_use_block("run_command", {"command": "python3 test_calc.py"})]),
        Reply([tool_use_block("read_file", {"path": "calc.py"})]),
        Reply([tool_use_block("edit_file", {"path": "calc.py", "old_text": "return a + b",
                                            "new_text": "return int(a) + int(b)"})]),
        Reply([tool_use_block("run_command", {"command": "python3 test_calc.py && seq 1 40"})]),
        Reply([tool_use_block("search_files", {"pattern": "def \\w+"})]),
        Reply([tool_use_block("list_files", {})]),
        Reply([tool_use_block("read_file", {"path": "test_calc.py"})]),
        Reply([text_block("calc.add now coerces to int; test_calc.py passes.")]),
    ]
    return script


def test_ten_call_session_writes_files_runs_commands_and_reads_the_cache(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(coding_script()) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "-p", "full-auto", "make calc.py with add() and test it"], workspace, env)
    assert ran.code == 0, ran.err
    assert "calc.add now coerces to int" in ran.out
    assert "→ run_command python3 test_calc.py" in ran.err
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return int(a) + int(b)\n"

    assert len(server.requests) == 10
    assert all(r.status == 200 and r.error is None for r in server.requests)
    events = events_of(session_logs(workspace)[0])
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(results) == 9 and not any(r.is_error for r in results)
    assert "ok" in results[2].output and "\n40\n" in results[5].output

    # usage in the log is exactly what the server billed, call by call
    usages = [e for e in events if isinstance(e, UsageEvent)]
    billed = [r.usage for r in server.requests]
    assert [(u.input, u.cache_read, u.cache_write, u.output) for u in usages] == [
        (b["input_tokens"], b["cache_read_input_tokens"], b["cache_creation_input_tokens"], b["output_tokens"])
        for b in billed]

    # each call reads the whole prompt of the call before it from the cache: nothing reusable is re-sent
    totals = [b["input_tokens"] + b["cache_read_input_tokens"] + b["cache_creation_input_tokens"] for b in billed]
    assert [b["cache_read_input_tokens"] for b in billed[1:]] == totals[:-1]
    later = billed[1:]
    prompt = sum(b["input_tokens"] + b["cache_read_input_tokens"] + b["cache_creation_input_tokens"] for b in later)
    read = sum(b["cache_read_input_tokens"] for b in later)
    assert read / prompt >= 0.90, f"cache hit rate from the 2nd request on: {read / prompt:.1%}"

    # what was sent is what the log renders, request by request
    for i, recorded in enumerate(server.requests):
        upto = [e for e in events if not isinstance(e, AssistantEvent) or e.seq < _nth_assistant_seq(events, i)]
        upto = upto[: _events_before_call(events, i)]
        assert recorded.json["messages"] == render(upto).messages


def _nth_assistant_seq(events: list, n: int) -> int:  # type: ignore[type-arg]
    return [e.seq for e in events if isinstance(e, AssistantEvent)][n]


def _events_before_call(events: list, n: int) -> int:  # type: ignore[type-arg]
    """How many events existed when the n-th model call was made."""
    return [i for i, e in enumerate(events) if isinstance(e, AssistantEvent)][n]


def test_a_huge_output_is_a_preview_in_the_prompt_and_kept_whole_in_the_log(workspace: Path, home: Path) -> None:
    script = [Reply([tool_use_block("run_command", {"command": "seq 1 100000"})]), Reply.text("Counted.")]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "-p", "full-auto", "count"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    result = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, ToolResultEvent)][0]
    assert result.output.splitlines()[-1] == "100000" and len(result.output.splitlines()) == 100000
    shown = server.requests[1].json["messages"][-1]["content"][0]["content"]
    note, first = shown.splitlines()[:2]
    assert len(shown) < 2_500 and first == "1" and shown.rstrip().endswith("\n99999\n100000")
    assert note.startswith("[run_command output: 100,000 lines, 588,895 characters; shown here: lines 1-")
    assert f'recall {{"seq": {result.seq}, "lines": ' in note


def test_continue_only_appends_and_keeps_the_prefix_byte_stable(workspace: Path, home: Path) -> None:
    script = [
        Reply([tool_use_block("write_file", {"path": "notes.txt", "content": "one\n" * 400})]),
        Reply([text_block("Wrote notes.txt.")]),
        Reply([tool_use_block("read_file", {"path": "notes.txt"})]),
        Reply([text_block("It has 400 lines.")]),
        Reply([text_block("Still here.")]),
    ]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "write notes"], workspace, env).code == 0
        log = session_logs(workspace)[0]
        before = log.read_bytes()
        assert run_scribe(["run", "-c", "count the lines"], workspace, env).code == 0
        middle = log.read_bytes()
        assert run_scribe(["run", "--session", log.stem[:15], "still there?"], workspace, env).code == 0
        after = log.read_bytes()
    assert session_logs(workspace) == [log]
    assert middle.startswith(before) and after.startswith(middle)
    events = events_of(log)
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(isinstance(e, SessionEvent) for e in events) == 1
    assert [e.text for e in events if isinstance(e, UserEvent)] == ["write notes", "count the lines", "still there?"]

    bodies = [r.json for r in server.requests]
    for earlier, later in zip(bodies, bodies[1:], strict=False):
        old, new = prefix_blocks(_as_request(earlier)), prefix_blocks(_as_request(later))
        assert new[: len(old)] == old
    # the first call of each new process reads what the previous process wrote
    assert server.requests[2].usage["cache_read_input_tokens"] > 0
    assert server.requests[4].usage["cache_read_input_tokens"] > 0


def _as_request(body: dict):  # type: ignore[no-untyped-def]
    from scribe.context.render import Request

    return Request(body["model"], body["max_tokens"], body["tools"], body["system"], body["messages"])


def test_refused_command_names_the_flag_and_the_model_adapts(workspace: Path, home: Path) -> None:
    script = [Reply([tool_use_block("run_command", {"command": "touch hacked"})]),
              Reply([text_block("I was not allowed to run it.")])]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "run touch"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0
    assert not (workspace / "hacked").exists()
    result = server.requests[1].json["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert "--permission-mode full-auto" in result["content"]


def test_read_only_refuses_edits(workspace: Path, home: Path) -> None:
    script = [Reply([tool_use_block("write_file", {"path": "x.txt", "content": "x"})]), Reply.text("ok")]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "-p", "read-only", "write x"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0 and not (workspace / "x.txt").exists()
    assert "--permission-mode accept-edits" in server.requests[1].json["messages"][-1]["content"][0]["content"]


def test_json_output_and_stdin_prompt(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("All good.")]) as server:
        ran = run_scribe(["run", "-o", "json", "-"], workspace, scribe_env(server.base_url, home),
                         stdin="how are things?\n")
    assert ran.code == 0, ran.err
    data = ran.json()
    assert data["result"] == "All good." and data["stop_reason"] == "end_turn" and data["calls"] == 1
    assert data["usage"]["calls"] == 1 and data["usage"]["input"] + data["usage"]["cache_write"] > 0
    assert Path(data["log"]).is_file() and data["session_id"] in data["log"]
    assert server.requests[0].json["messages"][0]["content"][0]["text"] == "how are things?\n"


def test_max_turns_stops_with_exit_3_and_a_continuable_log(workspace: Path, home: Path) -> None:
    script = [Reply([tool_use_block("list_files", {})]) for _ in range(3)] + [Reply.text("done")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "--max-turns", "2", "loop"], workspace, env)
        assert ran.code == 3 and "--max-turns" in ran.err
        assert len(server.requests) == 2
        again = run_scribe(["run", "-c", "go on"], workspace, env)
    assert again.code == 0, again.err
    assert all(r.error is None for r in server.requests)


def test_model_flag_with_continue_switches_the_session(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("one"), Reply.text("two"), Reply.text("three"), Reply.text("four")]) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "hello"], workspace, env).code == 0
        assert run_scribe(["run", "-c", "-m", "claude-opus-test", "harder now"], workspace, env).code == 0
        assert run_scribe(["run", "-c", "and still"], workspace, env).code == 0  # the switch is kept
        assert run_scribe(["run", "-c", "-m", "claude-opus-test", "same"], workspace, env).code == 0
        models = [r.json["model"] for r in server.requests]
    assert models[0] != "claude-opus-test" and models[1:] == ["claude-opus-test"] * 3
    switches = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, ModelSwitchEvent)]
    assert [e.model for e in switches] == ["claude-opus-test"]  # asking again for the same model adds none


def test_missing_key_is_one_line_and_nonzero(workspace: Path, home: Path) -> None:
    env = scribe_env("http://127.0.0.1:9", home)
    del env["ANTHROPIC_API_KEY"]
    ran = run_scribe(["run", "hello"], workspace, env)
    assert ran.code == 2
    assert ran.err.strip().count("\n") == 0 and "ANTHROPIC_API_KEY" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize("base_url", ["notaurl", "http://[::1", "ftp://example.com"])
def test_a_bad_base_url_is_one_line_before_any_call(workspace: Path, home: Path, base_url: str) -> None:
    ran = run_scribe(["run", "hello"], workspace, scribe_env(base_url, home))
    assert ran.code == 2, ran.err
    assert ran.err.strip().count("\n") == 0 and "ANTHROPIC_BASE_URL" in ran.err and base_url in ran.err
    assert "Traceback" not in ran.err and "retrying" not in ran.err


def test_api_failure_ends_the_turn_with_one_line_and_an_intact_log(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Fault(status=400, message="prompt is too long")]) as server:
        ran = run_scribe(["run", "hello"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 1
    assert "prompt is too long" in ran.err and "Traceback" not in ran.err
    assert "sk-test-secret-key" not in ran.err
    events = events_of(session_logs(workspace)[0])
    assert isinstance(events[-1], ErrorEvent) and "prompt is too long" in events[-1].message


def test_unknown_session_and_conflicting_flags(workspace: Path, home: Path) -> None:
    env = scribe_env("http://127.0.0.1:9", home)
    ran = run_scribe(["run", "-s", "nope", "hi"], workspace, env)
    assert ran.code == 2 and "no session matches 'nope'" in ran.err
    ran = run_scribe(["run", "-c", "-s", "x", "hi"], workspace, env)
    assert ran.code == 2 and "not both" in ran.err


def test_cut_stream_is_retried_whole_and_overload_by_the_sdk_without_duplicate_events(
        workspace: Path, home: Path) -> None:
    reply = Reply([text_block("Reading it now, this sentence is long enough to be cut."),
                   tool_use_block("read_file", {"path": "README.md"})])
    script = [Fault(kind="cut", after_events=4, reply=reply), Fault(status=529), reply, Reply.text("Read it.")]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "read the readme"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert "retrying" in ran.err
    assert [r.status for r in server.requests] == [200, 529, 200, 200]
    events = events_of(session_logs(workspace)[0])
    assert sum(isinstance(e, AssistantEvent) for e in events) == 2
    assert sum(isinstance(e, UsageEvent) for e in events) == 2
    assert all(r.error is None for r in server.requests)


@pytest.mark.slow
def test_ten_turns_across_ten_processes_read_the_cache_and_only_append(workspace: Path, home: Path) -> None:
    """Issue 2's acceptance run: ten `scribe run` turns (the first new, nine with --continue),
    each reading, writing or running something, against the fake API's cache accounting."""
    script: list[Reply] = []
    for i in range(10):
        script.append(Reply([text_block(f"Step {i}."), tool_use_block("write_file", {
            "path": f"step_{i}.py", "content": f"VALUE = {i}\nprint(VALUE * 2)\n"})]))
        script.append(Reply([tool_use_block("run_command", {"command": f"python3 step_{i}.py"})]))
        script.append(Reply([text_block(f"step_{i}.py prints {i * 2}.")]))
    sizes: list[int] = []
    previous = b""
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        for i in range(10):
            args = ["run", "-p", "full-auto", f"turn {i}: write step_{i}.py and run it"]
            ran = run_scribe(args if i == 0 else ["run", "-c", *args[1:]], workspace, env)
            assert ran.code == 0, ran.err
            assert f"prints {i * 2}" in ran.out
            log = session_logs(workspace)[0]
            sizes.append(log.stat().st_size)
            if i:
                assert log.read_bytes()[: sizes[-2]] == previous
            previous = log.read_bytes()
    assert len(server.requests) == 30 and all(r.status == 200 and r.error is None for r in server.requests)
    # The agent's calls: each reads the one before it from the cache. A side call (an observer
    # call of the payback rule, which forces its answer tool) is a prompt of its own, too short to
    # be cached at all, and is left out of the share.
    billed = [r.usage for r in server.requests if "tool_choice" not in r.json]
    later = billed[1:]
    prompt = sum(b["input_tokens"] + b["cache_read_input_tokens"] + b["cache_creation_input_tokens"] for b in later)
    read = sum(b["cache_read_input_tokens"] for b in later)
    print(f"\nrequests={len(billed)} hit_rate_from_2nd={read / prompt:.2%} prompt_tokens={prompt} "
          f"cache_read={read} log_bytes={sizes[-1]}")
    assert read / prompt >= 0.90


def test_a_continued_session_still_refuses_to_edit_a_file_changed_since_it_was_read(
        workspace: Path, home: Path) -> None:
    (workspace / "notes.txt").write_text("one\n")
    script = [Reply([tool_use_block("read_file", {"path": "notes.txt"})]), Reply.text("It says one."),
              Reply([tool_use_block("edit_file", {"path": "notes.txt", "old_text": "one", "new_text": "two"})]),
              Reply.text("Refused, as it should be.")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home, SCRIBE_WATCH_FILES="0")  # only the log can know
        assert run_scribe(["run", "read notes"], workspace, env).code == 0
        (workspace / "notes.txt").write_text("one, and the person's edit\n")  # between the runs
        ran = run_scribe(["run", "-c", "now change it"], workspace, env)
    assert ran.code == 0, ran.err
    assert (workspace / "notes.txt").read_text() == "one, and the person's edit\n"
    result = server.requests[3].json["messages"][-1]["content"][0]
    assert result["is_error"] is True and "changed since you last read it" in result["content"]
    first = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, ToolResultEvent)][0]
    assert list(first.seen) == ["notes.txt"]


def test_the_last_stream_json_event_names_the_session_and_what_the_run_cost(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(coding_script()) as server:
        env = scribe_env(server.base_url, home)
        streamed = run_scribe(["run", "-o", "stream-json", "add an add function"], workspace, env)
    with FakeMessagesServer(coding_script()) as server:
        summary = run_scribe(["run", "-o", "json", "add an add function"], workspace, scribe_env(server.base_url, home))
    assert streamed.code == 0 and summary.code == 0, streamed.err + summary.err
    lines = [json.loads(line) for line in streamed.out.splitlines()]
    last = lines[-1]
    # Claude Code's shapes: a `system`/`init` first, a `result` last
    assert lines[0]["type"] == "system" and lines[0]["subtype"] == "init"
    assert last["type"] == "result" and last["subtype"] == "success" and last["stop_reason"] == "end_turn"
    first_session = session_logs(workspace)[0].stem
    assert {line["session_id"] for line in lines} == {first_session}
    # the same figures as --output json gives for the same run
    assert last["usage"] == summary.json()["usage"] and last["usage"]["cost_usd"] > 0
    assert last["total_cost_usd"] == last["usage"]["cost_usd"]
