"""Logs damaged in ways a reader must survive: lines that are JSON but break the event schema,
and sessions whose log is partly or wholly unreadable. Each is reported, skipped and kept in
the file; nothing crashes and no session vanishes without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import CORRUPT_ON_PURPOSE
from helpers import adopt, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import AssistantEvent, UserEvent
from scribe.log.jsonl import LogWriter, read_log
from scribe.log.verify import verify_bytes

NO_API = "http://127.0.0.1:9"

# Valid JSON, a known type, a field of the wrong type: each crashed show, stats and -c.
SCHEMA_BREAKERS = {
    "user text is a number": {"type": "user", "text": 123},
    "assistant content is null": {"type": "assistant", "content": None, "stop_reason": "end_turn"},
    "a content block is a string": {"type": "assistant", "content": ["hi"], "stop_reason": "end_turn"},
    "a tool_use block lacks its id": {"type": "assistant", "stop_reason": "tool_use",
                                      "content": [{"type": "tool_use", "name": "read_file", "input": {}}]},
    "usage input is a string": {"type": "usage", "purpose": "agent", "model": "m", "input": "10",
                                "cache_read": 0, "cache_write": 0, "output": 1},
    "observation seq_to is null": {"type": "observation", "text": "x", "seq_from": 1, "seq_to": None,
                                   "tokens": 1, "model": "m"},
    "tool_result output is a list": {"type": "tool_result", "tool_use_id": "t", "tool": "x", "output": ["a"]},
    "is_error is a string": {"type": "tool_result", "tool_use_id": "t", "tool": "x", "output": "", "is_error": "no"},
}


def session_with_bad_lines(workspace: Path, home: Path, bad: list[dict]) -> Path:
    with FakeMessagesServer([Reply.text("first answer")]) as server:
        assert run_scribe(["run", "hello"], workspace, scribe_env(server.base_url, home)).code == 0
    log = session_logs(workspace)[0]
    (log.parent / CORRUPT_ON_PURPOSE).touch()
    seq = len(log.read_bytes().splitlines())
    with log.open("a") as fh:
        for record in bad:
            fh.write(json.dumps({"v": 1, "seq": seq, "ts": "2026-01-01T00:00:00.000Z", **record}) + "\n")
            seq += 1
    adopt(log)  # lines scribe did not write: the person vouches for them, or scribe would not continue it
    return log


@pytest.mark.parametrize("case", list(SCHEMA_BREAKERS))
def test_a_line_that_breaks_the_schema_is_skipped_like_a_corrupt_one(tmp_path: Path, case: str) -> None:
    log = tmp_path / "s.jsonl"
    with LogWriter.create(log) as writer:
        writer.append(UserEvent, text="before")
    with log.open("a") as fh:
        fh.write(json.dumps({"v": 1, "seq": 1, "ts": "t", **SCHEMA_BREAKERS[case]}) + "\n")
    read = read_log(log)
    assert [(p.line, p.kind) for p in read.problems] == [(2, "invalid")]
    assert read.problems[0].message.endswith("; skipped")
    assert [e.seq for e in read.events] == [0] and read.last_seq == 1


def test_log_commands_and_continue_skip_schema_breaking_lines_and_keep_them(workspace: Path, home: Path) -> None:
    log = session_with_bad_lines(workspace, home, list(SCHEMA_BREAKERS.values()))
    before = log.read_bytes()
    env = scribe_env(NO_API, home)
    for command in (["log", "show"], ["log", "stats"], ["log", "list"], ["log", "show", "--json"],
                    ["log", "prompt"], ["log", "tail"]):
        ran = run_scribe(command, workspace, env)
        assert ran.code == 0, (command, ran.err)
        assert "Traceback" not in ran.err, (command, ran.err)
    shown = run_scribe(["log", "show"], workspace, env)
    assert "first answer" in shown.out
    assert "line 5: " in shown.err and "skipped" in shown.err  # reported on stderr, one line each
    assert log.read_bytes() == before  # kept in the file

    with FakeMessagesServer([Reply.text("second answer")]) as server:
        ran = run_scribe(["run", "-c", "again"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert "second answer" in ran.out and "Traceback" not in ran.err
    assert ran.err.count("scribe: note:") == len(SCHEMA_BREAKERS)
    text = log.read_bytes()
    assert text.startswith(before)  # only appended
    # The new lines continue the seqs of every line, readable or not: verify finds only the bad lines.
    verdict = verify_bytes(text)
    assert {f.line for f in verdict.errors} == set(range(5, 5 + len(SCHEMA_BREAKERS)))
    events = read_log(log).events
    assert isinstance(events[-3], UserEvent) and events[-3].text == "again"
    assert isinstance(events[-2], AssistantEvent)
    assert events[-3].seq == 4 + len(SCHEMA_BREAKERS)
