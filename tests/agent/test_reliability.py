"""API faults, one writer per session, secrets, and bad input: each ends with one clear line,
the right exit code, and a log that is intact and can be continued."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import CORRUPT_ON_PURPOSE
from helpers import SCRIBE, adopt, events_of, run_scribe, scribe_env, session_logs, trust
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, ErrorEvent, UsageEvent
from scribe.log.jsonl import read_log

KEY = "sk-test-secret-key"


def fast_retries(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    return scribe_env(base_url, home, SCRIBE_RETRY_BACKOFF_S="0.01", **extra)


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and KEY not in err


@pytest.mark.parametrize("fault", [Fault(status=429), Fault(status=500), Fault(status=529), Fault(kind="drop"),
                                   Fault(kind="cut", after_events=3)], ids=["429", "500", "529", "drop", "cut"])
def test_transient_faults_are_retried_and_each_call_is_logged_once(workspace: Path, home: Path, fault: Fault) -> None:
    script = [fault, fault, Reply([text_block("Fine after all.")])]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "hi"], workspace, fast_retries(server.base_url, home))
    assert ran.code == 0, ran.err
    assert "Fine after all." in ran.out and ran.err.count("retrying") == 2
    assert len(server.requests) == 3
    events = events_of(session_logs(workspace)[0])
    assert sum(isinstance(e, AssistantEvent) for e in events) == 1
    assert sum(isinstance(e, UsageEvent) for e in events) == 1


def test_retries_exhausted_end_with_one_line_and_a_log_that_continues(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Fault(status=529, message="Overloaded")] * 3 + [Reply.text("back")]) as server:
        env = fast_retries(server.base_url, home, SCRIBE_MAX_RETRIES="2")
        ran = run_scribe(["run", "hi"], workspace, env)
        assert ran.code == 1
        last = ran.err.strip().splitlines()[-1]
        assert last == "scribe: model call failed after 3 tries: HTTP 529: Overloaded (the API is overloaded)"
        no_traceback(ran.err)
        assert len(server.requests) == 3
        again = run_scribe(["run", "-c", "still there?"], workspace, env)
    assert again.code == 0 and "back" in again.out
    events = events_of(session_logs(workspace)[0])
    assert any(isinstance(e, ErrorEvent) and "529" in e.message for e in events)
    assert all(r.error is None for r in server.requests)


def test_bad_request_is_not_retried(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Fault(status=404, message="model: claude-nope")]) as server:
        ran = run_scribe(["run", "-m", "claude-nope", "hi"], workspace, fast_retries(server.base_url, home))
    assert ran.code == 1 and len(server.requests) == 1
    assert "HTTP 404: model: claude-nope (unknown model? --model, /model or SCRIBE_MODEL picks another)" in ran.err
    no_traceback(ran.err)


def test_the_key_never_reaches_the_log_or_the_commands(workspace: Path, home: Path) -> None:
    script = [Reply([tool_use_block("run_command", {"command": "env"})]), Fault(status=401, message="invalid x-api-key")]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "-p", "full-auto", "show env"], workspace, fast_retries(server.base_url, home))
    assert ran.code == 1 and "check ANTHROPIC_API_KEY" in ran.err
    no_traceback(ran.err)
    log = session_logs(workspace)[0].read_text()
    assert KEY not in log
    env_output = next(e for e in events_of(session_logs(workspace)[0]) if e.type == "tool_result").output
    assert "ANTHROPIC" not in env_output and "SCRIBE=1" in env_output


def test_one_writer_per_session_and_two_sessions_side_by_side(workspace: Path, home: Path) -> None:
    def script(request: dict[str, Any]) -> Reply:
        """Answers by what was asked, not by arrival order: the two processes' calls interleave."""
        last = request["messages"][-1]["content"][-1]
        if last.get("type") == "tool_result":
            return Reply.text("slept")
        return {"sleep": Reply([tool_use_block("run_command", {"command": "sleep 4"})]),
                "another session": Reply.text("second session")}.get(last.get("text", ""), Reply.text("continued"))

    with FakeMessagesServer(script) as server:
        env = fast_retries(server.base_url, home)
        first = subprocess.Popen([SCRIBE, "run", "-p", "full-auto", "sleep"], cwd=workspace, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while len(server.requests) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        # the first session is mid-command: a second writer is refused, a new session runs
        refused = run_scribe(["run", "-c", "me too"], workspace, env)
        assert refused.code == 2
        assert "is being written by process" in refused.err and "Traceback" not in refused.err
        beside = run_scribe(["run", "another session"], workspace, env)
        assert beside.code == 0 and "second session" in beside.out
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, err
        assert "slept" in out
        logs = session_logs(workspace)
        assert len(logs) == 2
        first_log = next(p for p in logs if "sleep" in p.read_text())
        again = run_scribe(["run", "--session", first_log.stem, "and now?"], workspace, env)
        assert again.code == 0 and "continued" in again.out
    for log in logs:
        assert not read_log(log).problems


@pytest.mark.parametrize(("content", "message"), [
    ("model = ", "not valid TOML"),
    ("colour = 'blue'", "unknown setting colour"),
    ("max_turns = 'many'", "max_turns: expected int, got 'many'"),
    ("permission_mode = 'yolo'", "permission_mode 'yolo' is not one of"),
    ("settled_output_chars = 0", "settled_output_chars must be at least 200, got 0"),
    ("retention = 1.5", "retention must be at most 0.9, got 1.5"),
])
def test_a_bad_config_file_is_one_clear_line(workspace: Path, home: Path, content: str, message: str) -> None:
    (workspace / ".scribe").mkdir(exist_ok=True)
    (workspace / ".scribe" / "config.toml").write_text(content + "\n")
    trust(workspace, home)
    ran = run_scribe(["run", "hi"], workspace, scribe_env("http://127.0.0.1:9", home))
    assert ran.code == 2 and message in ran.err
    assert len(ran.err.strip().splitlines()) == 1
    no_traceback(ran.err)


def test_bad_environment_value_is_one_clear_line(workspace: Path, home: Path) -> None:
    ran = run_scribe(["run", "hi"], workspace, scribe_env("http://127.0.0.1:9", home, SCRIBE_OBSERVE_TOKENS="lots"))
    assert ran.code == 2 and "SCRIBE_OBSERVE_TOKENS: expected int, got 'lots'" in ran.err
    ran = run_scribe(["run", "hi"], workspace, scribe_env("http://127.0.0.1:9", home, SCRIBE_MAX_TURNS="0"))
    assert ran.code == 2 and "SCRIBE_MAX_TURNS: max_turns must be at least 1, got 0" in ran.err


def test_unreadable_and_newer_logs_are_refused_clearly(workspace: Path, home: Path) -> None:
    sessions = workspace / ".scribe" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / CORRUPT_ON_PURPOSE).touch()
    garbage = sessions / "20990101-000000-aaaaaa.jsonl"
    garbage.write_bytes(bytes(range(256)) * 40)  # not a log at all
    env = scribe_env("http://127.0.0.1:9", home)
    ran = run_scribe(["run", "--session", "20990101-000000-aaaaaa", "hi"], workspace, env)
    assert ran.code == 2 and "does not begin with a session event; it cannot be continued" in ran.err
    no_traceback(ran.err)
    assert garbage.read_bytes() == bytes(range(256)) * 40

    newer = sessions / "20990102-000000-bbbbbb.jsonl"
    header = {"v": 1, "seq": 0, "ts": "t", "type": "session", "id": "x", "created": "t", "cwd": str(workspace),
              "model": "m", "scribe_version": "9", "system": "s", "tools": [], "prompt_hash": "h", "config": {}}
    newer.write_text(json.dumps(header) + '\n{"v":2,"seq":1,"ts":"t","type":"hologram","beam":1}\n')
    before = newer.read_bytes()
    ran = run_scribe(["run", "--session", "20990102", "hi"], workspace, env)
    assert ran.code == 2 and "written by a newer scribe" in ran.err
    assert newer.read_bytes() == before  # nothing appended to a log we do not understand


def test_unknown_event_types_and_fields_survive_a_continue(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("one"), Reply.text("two")]) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "hi"], workspace, env).code == 0
        log = session_logs(workspace)[0]
        lines = log.read_text().splitlines()
        with log.open("a") as fh:
            fh.write(f'{{"v":1,"seq":{len(lines)},"ts":"t","type":"telemetry","beam":[1,2]}}\n')
        adopt(log)  # as a newer scribe (same key) would have sealed its line
        assert run_scribe(["run", "-c", "again"], workspace, env).code == 0
    text = log.read_text()
    assert '"type":"telemetry","beam":[1,2]' in text
    assert all(r.error is None for r in server.requests)


def test_scribe_config_shows_each_setting_and_its_source(workspace: Path, home: Path) -> None:
    (workspace / ".scribe").mkdir(exist_ok=True)
    (workspace / ".scribe" / "config.toml").write_text("max_turns = 7\ncommand_timeout_s = 30\n")
    trust(workspace, home)
    env = scribe_env("http://127.0.0.1:9", home, SCRIBE_MAX_TURNS="9")
    ran = run_scribe(["config", "--json"], workspace, env)
    assert ran.code == 0, ran.err
    shown = ran.json()
    assert shown["max_turns"] == {"value": 9, "source": "SCRIBE_MAX_TURNS"}  # environment beats the file
    assert shown["command_timeout_s"] == {"value": 30.0, "source": str(workspace / ".scribe" / "config.toml")}
    assert shown["model"]["source"] == "default"
    text = run_scribe(["config"], workspace, env)
    assert text.code == 0 and "SCRIBE_MAX_TURNS" in text.out
