"""`scribe log ...` end to end: the real executable over logs written by real `scribe run`s
against the fake API (and over logs written by hand where a case needs it)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from builders import header_fields
from helpers import SCRIBE, Ran, adopt, events_of, run_scribe, scribe_env, session_logs
from scribe.context.render import canonical_json, prefix_blocks, render
from scribe.context.tokens import event_tokens
from scribe.fakeapi import FakeMessagesServer, RecordedRequest, Reply, text_block, tool_use_block
from scribe.log.events import (
    AssistantEvent,
    Event,
    FileChangeEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
    now_iso,
)
from scribe.log.follow import LineFollower
from scribe.log.jsonl import LogWriter, encode, read_log
from scribe.log.pricing import call_cost, uncached_cost
from scribe.log.verify import verify_bytes

NOTES = "".join(f"line {i}\n" for i in range(1, 31))
NO_API = "http://127.0.0.1:9"  # log commands never call the model


def script() -> list[Reply]:
    """Eight calls over three processes (a new session, then two --continue runs)."""
    return [
        Reply([text_block("Writing notes."), tool_use_block("write_file", {"path": "notes.txt", "content": NOTES})]),
        Reply([tool_use_block("run_command", {"command": "wc -l notes.txt && seq 1 30"})]),
        Reply([text_block("notes.txt has 30 lines.")]),
        Reply([tool_use_block("read_file", {"path": "notes.txt"})]),
        Reply([tool_use_block("run_command", {"command": "echo oops >&2; exit 3"})]),
        Reply([text_block("The last command failed with exit 3.")]),
        Reply([tool_use_block("search_files", {"pattern": "line 1\\d"})]),
        Reply([text_block("Found line 10 to line 19.")]),
    ]


PROMPTS = ["write notes.txt and count it", "read it back", "find line 1x"]


@dataclass
class Recorded:
    workspace: Path
    home: Path
    log: Path
    requests: list[RecordedRequest]

    @property
    def env(self) -> dict[str, str]:
        return scribe_env(NO_API, self.home)

    @property
    def events(self) -> list[Event]:
        return events_of(self.log)

    def log_cmd(self, *args: str, cwd: Path | None = None) -> Ran:
        return run_scribe(["log", *args], cwd or self.workspace, self.env, timeout=30)


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.invalid"],
                 ["config", "user.name", "T"], ["commit", "-q", "--allow-empty", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path.resolve()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    root = tmp_path_factory.mktemp("log-cli")
    workspace, home = init_repo(root / "workspace"), root / "home"
    home.mkdir()
    with FakeMessagesServer(script()) as server:
        env = scribe_env(server.base_url, home)
        first = run_scribe(["run", "-p", "full-auto", PROMPTS[0]], workspace, env)
        assert first.code == 0, first.err
        log = session_logs(workspace)[0]
        # a change outside scribe, as the file watcher records it, lands between the processes
        with LogWriter.resume(log, read_log(log)) as writer:
            writer.append(FileChangeEvent, path="notes.txt", kind="modified", stale=True)
        for prompt in PROMPTS[1:]:
            ran = run_scribe(["run", "-c", "-p", "full-auto", prompt], workspace, env)
            assert ran.code == 0, ran.err
    assert [r.status for r in server.requests] == [200] * 8
    return Recorded(workspace, home, log, list(server.requests))


def assert_all_logs_verify(*folders: Path) -> None:
    for folder in folders:
        for path in folder.rglob("*.jsonl"):
            verdict = verify_bytes(path.read_bytes())
            assert verdict.ok and not verdict.findings, (path, [str(f) for f in verdict.findings])


# -- prompt ------------------------------------------------------------------------------------


def test_prompt_at_rebuilds_every_agent_call_byte_for_byte_across_processes(recorded: Recorded) -> None:
    events = recorded.events
    assistants = [e for e in events if isinstance(e, AssistantEvent)]
    assert len(assistants) == len(recorded.requests) == 8
    for assistant, request in zip(assistants, recorded.requests, strict=True):
        ran = recorded.log_cmd("prompt", "--at", str(assistant.seq))
        assert ran.code == 0, ran.err
        assert ran.out == canonical_json(request.json) + "\n", f"call at seq {assistant.seq}"
    # the usage event of a call names the same call; the 4th is the first of the 2nd process
    usage = next(e for e in events if isinstance(e, UsageEvent) and e.seq > assistants[3].seq)
    assert recorded.log_cmd("prompt", "--at", str(usage.seq)).out == canonical_json(recorded.requests[3].json) + "\n"
    # the file change written between the processes is in what the 4th call received
    assert "[outside scribe: notes.txt was modified" in recorded.log_cmd("prompt", "--at", str(usage.seq)).out

    # without --at: the request the next call would send, which extends the last one
    ran = recorded.log_cmd("prompt", recorded.log.stem[:12])
    body = json.loads(ran.out)
    assert body["stream"] is True and ran.out == canonical_json(render(events).body()) + "\n"
    last = recorded.requests[-1].json
    as_request = render(events).__class__
    old = prefix_blocks(as_request(last["model"], last["max_tokens"], last["tools"], last["system"], last["messages"]))
    new = prefix_blocks(as_request(body["model"], body["max_tokens"], body["tools"], body["system"], body["messages"]))
    assert new[: len(old)] == old and len(new) > len(old)


def test_prompt_refuses_what_is_not_an_agent_call(recorded: Recorded) -> None:
    user = next(e for e in recorded.events if isinstance(e, UserEvent))
    ran = recorded.log_cmd("prompt", "--at", str(user.seq))
    assert ran.code == 2 and "is a user event, not a model call" in ran.err and ran.out == ""
    ran = recorded.log_cmd("prompt", "--at", "9999")
    assert ran.code == 2 and "no event with seq 9999" in ran.err
    assert ran.err.count("\n") == 1 and "Traceback" not in ran.err


def test_observations_and_reflections_written_by_hand_are_rendered_counted_and_shown(
        recorded: Recorded, tmp_path: Path) -> None:
    log = tmp_path / "compressed.jsonl"
    shutil.copy(recorded.log, log)
    adopt(log)  # a copy: its seal stayed with the original
    events = events_of(log)
    users = [e.seq for e in events if isinstance(e, UserEvent)]
    first_to, second_to = users[1] - 1, users[2] - 1
    with LogWriter.resume(log, read_log(log)) as writer:
        observer = writer.append(UsageEvent, purpose="observer", model="claude-haiku-5-5", input=900, cache_read=0,
                                 cache_write=0, output=60, latency_ms=5)
        one = writer.append(ObservationEvent, text="- wrote notes.txt (30 lines) and counted them",
                            seq_from=1, seq_to=first_to, tokens=40, model="claude-haiku-5-5")
        two = writer.append(ObservationEvent, text="- read notes.txt back; `exit 3` failed",
                            seq_from=first_to + 1, seq_to=second_to, tokens=30, model="claude-haiku-5-5")
        writer.append(ReflectionEvent, text="- notes.txt: 30 lines, written and counted", supersedes=[one.seq],
                      tokens=12, model="claude-haiku-5-5")
    events = events_of(log)
    ran = run_scribe(["log", "prompt", str(log)], recorded.workspace, recorded.env)
    assert ran.code == 0, ran.err
    assert ran.out == canonical_json(render(events).body()) + "\n"
    body = json.loads(ran.out)
    system = [b["text"] for b in body["system"]]
    assert len(system) == 3
    assert system[1].startswith('<observations reflected="') and "30 lines, written and counted" in system[1]
    assert system[2].startswith(f'<observations events="{first_to + 1}-{second_to}">') and "exit 3" in system[2]
    shown = json.dumps(body["messages"])
    assert PROMPTS[2] in shown and PROMPTS[0] not in shown and PROMPTS[1] not in shown

    ran = run_scribe(["log", "prompt", str(log), "--at", str(observer.seq)], recorded.workspace, recorded.env)
    # written by hand, it records nothing of its request (scribe's own side calls do)
    assert ran.code == 2 and "this side call recorded nothing to rebuild its request from" in ran.err

    stats = run_scribe(["log", "stats", "--json", str(log)], recorded.workspace, recorded.env).json()
    assert list(stats["by_purpose"]) == ["agent", "observer"] and stats["by_purpose"]["observer"]["calls"] == 1
    raw = sum(event_tokens(e) for e in events for o in (one, two) if o.seq_from <= e.seq <= o.seq_to)
    assert stats["compression"] == {"observations": 2, "raw_tokens": raw, "observation_tokens": 70,
                                    "ratio": round(raw / 70, 4), "reflections": 1, "reflection_tokens": 12}

    shown = run_scribe(["log", "show", str(log), "--type", "observation", "--type", "reflection"],
                       recorded.workspace, recorded.env)
    assert f"[{one.seq}] observation of events 1-{first_to} · 40 tokens" in shown.out
    assert f"[{two.seq + 1}] reflection replacing {one.seq} · 12 tokens" in shown.out
    assert "counted them" in shown.out and "user ·" not in shown.out
    assert_all_logs_verify(tmp_path)


# -- stats and list ----------------------------------------------------------------------------


def billed(request: RecordedRequest) -> dict[str, int]:
    u = request.usage or {}
    return {"input": u["input_tokens"], "cache_read": u["cache_read_input_tokens"],
            "cache_write": u["cache_creation_input_tokens"], "output": u["output_tokens"]}


def test_stats_equal_what_the_server_billed_call_by_call(recorded: Recorded) -> None:
    data = recorded.log_cmd("stats", "--json").json()
    bills = [billed(r) for r in recorded.requests]
    per_call = data["per_call"]
    assert [{k: c[k] for k in ("input", "cache_read", "cache_write", "output")} for c in per_call] == bills
    assert {c["purpose"] for c in per_call} == {"agent"} and list(data["by_purpose"]) == ["agent"]
    models = [r.json["model"] for r in recorded.requests]
    costs = [call_cost(m, **b) for m, b in zip(models, bills, strict=True)]
    uncached = [uncached_cost(m, **b) for m, b in zip(models, bills, strict=True)]
    assert [c["cost_usd"] for c in per_call] == pytest.approx(costs, abs=1e-8)
    total = data["total"]
    for key in ("input", "cache_read", "cache_write", "output"):
        assert total[key] == sum(b[key] for b in bills)
    assert total["calls"] == 8 and total["prompt_tokens"] == total["input"] + total["cache_read"] + total["cache_write"]
    assert total["hit_rate"] == pytest.approx(total["cache_read"] / total["prompt_tokens"], abs=1e-6)
    assert total["cost_usd"] == pytest.approx(sum(costs), abs=1e-6)
    assert total["uncached_cost_usd"] == pytest.approx(sum(uncached), abs=1e-6)
    assert total["saved_usd"] == pytest.approx(sum(uncached) - sum(costs), abs=1e-6) and total["saved_usd"] > 0
    assert data["by_purpose"]["agent"] == total
    assert data["compression"]["observations"] == 0 and data["session_id"] == recorded.log.stem

    readable = recorded.log_cmd("stats")
    assert readable.code == 0 and f"{total['cache_read']:,}" in readable.out and "no-cache cost" in readable.out
    assert f"${total['cost_usd']:.4f}" in readable.out and "compression: no observations yet" in readable.out


def make_session(state: Path, session_id: str, cwd: Path, usages: list[dict[str, Any]] = (),  # type: ignore[assignment]
                 users: int = 1) -> Path:
    path = state / "sessions" / f"{session_id}.jsonl"
    with LogWriter.create(path) as writer:
        writer.append(SessionEvent, **header_fields(id=session_id, created=now_iso(), cwd=str(cwd),
                                                    model="claude-sonnet-5-5", scribe_version="0.1.0"))
        for i in range(users):
            writer.append(UserEvent, text=f"hello {i}")
        for usage in usages:
            writer.append(UsageEvent, **{"purpose": "agent", "model": "claude-sonnet-5-5", "latency_ms": 1, **usage})
    return path


def test_list_shows_the_workspace_sessions_and_all_of_them_with_all(recorded: Recorded, tmp_path: Path) -> None:
    rows = recorded.log_cmd("list", "--json").json()
    assert len(rows) == 1
    row, events, bills = rows[0], recorded.events, [billed(r) for r in recorded.requests]
    assert row["id"] == recorded.log.stem and row["turns"] == 3 and row["calls"] == 8
    assert row["prompt_tokens"] == sum(b["input"] + b["cache_read"] + b["cache_write"] for b in bills)
    assert row["input"] == sum(b["input"] for b in bills)  # uncached, as everywhere
    assert row["started"] == events[0].created and row["last_activity"] == events[-1].ts  # type: ignore[attr-defined]
    assert row["cost_usd"] == pytest.approx(sum(call_cost("claude-sonnet-5-5", **b) for b in bills), abs=1e-6)
    assert set(row) >= {"id", "started", "last_activity", "turns", "calls", "input", "prompt_tokens", "hit_rate",
                        "cost_usd"}

    # two workspaces sharing one state folder (SCRIBE_HOME): the default lists this one's only
    state = tmp_path / "state"
    here, there = init_repo(tmp_path / "here"), init_repo(tmp_path / "there")
    make_session(state, "20260101-000000-aaaaaa", here, users=2,
                 usages=[{"input": 10, "cache_read": 0, "cache_write": 2000, "output": 50},
                         {"input": 5, "cache_read": 2000, "cache_write": 100, "output": 70, "purpose": "observer",
                          "model": "claude-haiku-5-5"}])
    make_session(state, "20260102-000000-bbbbbb", there)
    env = scribe_env(NO_API, recorded.home, SCRIBE_HOME=str(state))
    mine = run_scribe(["log", "list", "--json"], here, env).json()
    assert [r["id"] for r in mine] == ["20260101-000000-aaaaaa"]
    assert mine[0]["turns"] == 2 and mine[0]["calls"] == 2 and mine[0]["prompt_tokens"] == 4115
    assert mine[0]["hit_rate"] == pytest.approx(2000 / 4115, abs=1e-6)
    expected = (call_cost("claude-sonnet-5-5", input=10, cache_read=0, cache_write=2000, output=50)
                + call_cost("claude-haiku-5-5", input=5, cache_read=2000, cache_write=100, output=70))
    assert mine[0]["cost_usd"] == pytest.approx(expected, abs=1e-6)
    everything = run_scribe(["log", "list", "--all"], here, env)
    assert everything.code == 0 and "20260101-000000-aaaaaa" in everything.out and "20260102-000000-bbbbbb" in everything.out
    assert str(there) in everything.out and "48.6%" in everything.out
    empty = run_scribe(["log", "list", "--json"], init_repo(tmp_path / "empty"), recorded.env)
    assert empty.code == 0 and empty.json() == []
    assert_all_logs_verify(state)


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_list_and_stats_fit_the_terminal_by_leaving_columns_out_never_cutting_values(
        recorded: Recorded, tmp_path: Path, width: int) -> None:
    state = tmp_path / "state"
    here = init_repo(tmp_path / "here")
    big = {"input": 1_234_567, "cache_read": 98_765_432, "cache_write": 1_000_000, "output": 250_000}
    ids = ["20260101-000000-aaaaaa", "20260102-000000-bbbbbb"]
    for session_id in ids:
        make_session(state, session_id, here, usages=[big, {**big, "purpose": "observer", "model": "claude-haiku-5-5"}])
    env = {**scribe_env(NO_API, recorded.home, SCRIBE_HOME=str(state)), "COLUMNS": str(width)}
    every = run_scribe(["log", "list", "--json"], here, env).json()
    costs = [f"${row['cost_usd']:,.4f}" for row in every]
    for args in (["log", "list"], ["log", "list", "--all"], ["log", "stats"]):
        ran = run_scribe(args, here, env)
        assert ran.code == 0, ran
        lines = ran.out.splitlines()
        table = [line for line in lines if "  " in line.strip()]  # the table's rows, not the prose
        assert table and all(len(line) <= width for line in table), (args, width, ran.out)
        assert "…" not in "\n".join(table), ran.out  # a value is shown whole or its column is left out
        if args[1] == "list":
            assert all(any(line.startswith(i) for line in lines) for i in ids), ran.out
            assert all(cost in ran.out for cost in costs), ran.out
            left_out = width < 120 or args[-1] == "--all"
        else:
            assert "$" in table[-1] and "agent" in ran.out and "observer" in ran.out, ran.out
            left_out = width < 120
        note = [line for line in ran.err.splitlines() if "left out to fit" in line]
        assert bool(note) == left_out, (args, width, ran.err)
        if note:
            assert note[0].startswith("scribe: note: ") and f"fit {width} columns" in note[0]


# -- show and tail ------------------------------------------------------------------------------


def headers(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("[")]


def test_show_is_a_readable_transcript_with_folded_outputs(recorded: Recorded) -> None:
    ran = recorded.log_cmd("show")
    assert ran.code == 0, ran.err
    out = ran.out
    for prompt in PROMPTS:
        assert f"    {prompt}" in out
    assert "    Writing notes." in out and "    → write_file notes.txt" in out
    assert "    → run_command wc -l notes.txt && seq 1 30" in out and "    → search_files line 1\\d" in out
    assert "← run_command error, exit 3" in out and "    oops" in out
    assert "file changed outside scribe: notes.txt modified (it changed since scribe last read it)" in out
    assert "usage · agent · claude-sonnet-5-5" in out
    # `wc` plus 30 numbers: the first and last four lines, and how many are hidden
    assert "    30 notes.txt\n    1\n    2\n    3\n    … 23 more lines (--full shows all) …\n    27\n" in out
    assert "\n    15\n" not in out
    full = recorded.log_cmd("show", "--full").out
    assert "more lines" not in full and "\n    15\n" in full and len(headers(full)) == len(recorded.events)


def test_show_filters_and_raw_and_json(recorded: Recorded) -> None:
    disk = recorded.log.read_bytes()
    raw = subprocess.run([SCRIBE, "log", "show", "--raw"], cwd=recorded.workspace, env=recorded.env,
                         capture_output=True, timeout=30)
    assert raw.returncode == 0 and raw.stdout == disk

    users = headers(recorded.log_cmd("show", "--type", "user").out)
    assert len(users) == 3 and all(" user · " in h for h in users)
    since = headers(recorded.log_cmd("show", "--since", "12", "--type", "usage", "--type", "tool_result").out)
    assert since and all(int(h[1:h.index("]")]) >= 12 for h in since)
    assert {h.split()[1] for h in since} == {"usage", "←"}

    shown = recorded.log_cmd("show", "--json").json()
    assert shown == [json.loads(line) for line in disk.splitlines()]
    assert all({"v", "seq", "ts", "type"} <= set(r) for r in shown)
    only = recorded.log_cmd("show", "--json", "--type", "assistant", "--since", "5").json()
    assert only and all(r["type"] == "assistant" and r["seq"] >= 5 for r in only)

    bad = recorded.log_cmd("show", "--type", "users")
    assert bad.code == 2 and "no event type 'users'" in bad.err and bad.err.count("\n") == 1
    missing = recorded.log_cmd("show", "nope")
    assert missing.code == 2 and "no session matches 'nope'" in missing.err and "Traceback" not in missing.err


def test_tail_prints_the_last_events(recorded: Recorded) -> None:
    events = recorded.events
    ran = recorded.log_cmd("tail", "-n", "3")
    assert [int(h[1:h.index("]")]) for h in headers(ran.out)] == [e.seq for e in events[-3:]]
    raw = recorded.log_cmd("tail", "-n", "2", "--raw")
    assert raw.out.encode() == b"".join(recorded.log.read_bytes().splitlines(keepends=True)[-2:])


class Watch:
    """A `scribe log tail -f` process whose stdout lines are collected by a thread."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([SCRIBE, "log", "tail", "-f", "--poll", "0.05", *args], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def next(self, timeout: float = 10) -> bytes:
        return self.lines.get(timeout=timeout)

    def quiet_for(self, seconds: float) -> bool:
        try:
            self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def stop(self, sig: int) -> tuple[int, str]:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=10)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read().decode()


class Appender(threading.Thread):
    """Another writer of the log: appends the bytes it is handed, one write each."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.todo: queue.Queue[bytes | None] = queue.Queue()

    def run(self) -> None:
        while (data := self.todo.get()) is not None:
            with self.path.open("ab") as fh:
                fh.write(data)


def test_tail_follow_prints_complete_lines_as_another_writer_appends_them(tmp_path: Path) -> None:
    workspace = init_repo(tmp_path / "ws")
    log = make_session(workspace / ".scribe", "20260101-000000-cccccc", workspace)
    env = scribe_env(NO_API, tmp_path)
    watch = Watch(["--raw"], workspace, env)
    on_disk = log.read_bytes().splitlines(keepends=True)
    assert [watch.next(), watch.next()] == on_disk  # the session event and the user event

    appender = Appender(log)
    appender.start()
    one = encode(UserEvent(seq=2, ts=now_iso(), text="appended whole"))
    two = encode(UserEvent(seq=3, ts=now_iso(), text="appended in two writes"))
    appender.todo.put(one)
    assert watch.next() == one
    appender.todo.put(two[:25])
    assert watch.quiet_for(0.5), "a line was printed before its newline was written"
    appender.todo.put(two[25:])
    assert watch.next() == two
    appender.todo.put(None)
    code, err = watch.stop(signal.SIGINT)
    assert code == 0 and "Traceback" not in err
    assert_all_logs_verify(workspace)


def test_tail_follow_readable_and_stopped_by_sigterm(tmp_path: Path) -> None:
    workspace = init_repo(tmp_path / "ws")
    log = make_session(workspace / ".scribe", "20260101-000000-dddddd", workspace)
    watch = Watch(["-n", "1"], workspace, scribe_env(NO_API, tmp_path))
    assert watch.next().decode().startswith("[1] user · ")
    assert watch.next() == b"    hello 0\n"
    appender = Appender(log)
    appender.start()
    call = {"type": "tool_use", "id": "toolu_x", "name": "run_command", "input": {"command": "printf 'a\\nb\\n'"}}
    appender.todo.put(encode(AssistantEvent(seq=2, ts=now_iso(), content=[call], stop_reason="tool_use")))
    appender.todo.put(encode(ToolResultEvent(seq=3, ts=now_iso(), tool_use_id="toolu_x", tool="run_command",
                                             output="a\nb\n", exit_code=0)))
    assert watch.next().decode().startswith("[2] assistant · ")
    assert watch.next() == b"    \xe2\x86\x92 run_command printf 'a\\nb\\n'\n"
    assert watch.next().decode().startswith("[3] \u2190 run_command ok, exit 0")
    assert [watch.next(), watch.next()] == [b"    a\n", b"    b\n"]
    appender.todo.put(None)
    code, err = watch.stop(signal.SIGTERM)
    assert code == 0 and "Traceback" not in err
    assert_all_logs_verify(workspace)


def test_line_follower_keeps_a_fragment_until_its_newline_and_drops_it_if_cut(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"a\nb")
    follower = LineFollower(path)
    assert follower.read() == [b"a"]
    with path.open("ab") as fh:
        fh.write(b"c")
    assert follower.read() == []
    with path.open("ab") as fh:
        fh.write(b"d\ne\n")
    assert follower.read() == [b"bcd", b"e"]
    with path.open("ab") as fh:
        fh.write(b"torn")
    assert follower.read() == []
    with path.open("r+b") as fh:  # a resuming writer cuts the torn tail and appends a whole line
        fh.truncate(len(b"a\nbcd\ne\n"))
        fh.seek(0, os.SEEK_END)
        fh.write(b"recovered line\n")
    assert follower.read() == [b"recovered line"]


# -- search --------------------------------------------------------------------------------------


def test_search_finds_lines_across_text_tool_calls_and_outputs(recorded: Recorded) -> None:
    rows = recorded.log_cmd("search", "--json", r"line 1\d").json()
    assert rows and all(set(r) == {"session_id", "seq", "type", "field", "line"} for r in rows)
    assert all(r["session_id"] == recorded.log.stem for r in rows)
    kinds = {(r["type"], r["field"]) for r in rows}
    assert ("tool_result", "output") in kinds and ("assistant", "tool_use write_file.content") in kinds
    outputs = [r["line"] for r in rows if r["type"] == "tool_result"]
    assert any(line.endswith("line 19") for line in outputs)
    assert ("assistant", "text") in kinds and ("user", "text") not in kinds

    readable = recorded.log_cmd("search", "exit 3")
    assert readable.code == 0 and readable.out.splitlines()
    assert all(line.startswith(recorded.log.stem) for line in readable.out.splitlines())

    assert recorded.log_cmd("search", "NOTES.TXT").code == 1
    insensitive = recorded.log_cmd("search", "-i", "--json", "NOTES.TXT").json()
    assert {r["type"] for r in insensitive} >= {"user", "assistant", "file_change"}
    pattern = recorded.log_cmd("search", "--json", r"line 1\\d").json()  # the search_files call itself
    assert [(r["type"], r["field"], r["line"]) for r in pattern] == [
        ("assistant", "tool_use search_files.pattern", "line 1\\d")]
    limited = recorded.log_cmd("search", "--json", "--session", recorded.log.stem[:10], r"line 1\d").json()
    assert limited == rows

    bad = recorded.log_cmd("search", "line (")
    assert bad.code == 2 and bad.out == "" and bad.err.count("\n") == 1
    assert "invalid regular expression 'line ('" in bad.err and "Traceback" not in bad.err


def test_search_trims_long_lines_around_the_match(tmp_path: Path) -> None:
    workspace = init_repo(tmp_path / "ws")
    log = make_session(workspace / ".scribe", "20260101-000000-eeeeee", workspace)
    with LogWriter.resume(log, read_log(log)) as writer:
        writer.append(UserEvent, text="x" * 5000 + "NEEDLE" + "y" * 5000)
    rows = run_scribe(["log", "search", "--json", "NEEDLE"], workspace, scribe_env(NO_API, tmp_path)).json()
    assert len(rows) == 1 and "NEEDLE" in rows[0]["line"] and len(rows[0]["line"]) <= 202


# -- verify --------------------------------------------------------------------------------------


def test_verify_passes_on_every_log_these_tests_wrote(recorded: Recorded) -> None:
    ran = recorded.log_cmd("verify")
    assert ran.code == 0 and ran.out.startswith("ok: ") and ran.err == ""
    data = recorded.log_cmd("verify", "--all", "--json").json()
    assert data and all(d["ok"] and d["problems"] == [] for d in data)
    assert {"session_id", "log", "ok", "lines", "events", "problems"} <= set(data[0])
    assert_all_logs_verify(recorded.workspace)


def corrupt(recorded: Recorded, tmp_path: Path, name: str, change: Callable[[list[bytes]], list[bytes]]) -> Ran:
    lines = recorded.log.read_bytes().split(b"\n")[:-1]
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in change(lines)))
    adopt(path)  # sealed: only its structure is in question here
    return recorded.log_cmd("verify", str(path))


def test_verify_fails_naming_the_line(recorded: Recorded, tmp_path: Path) -> None:
    def garble(lines: list[bytes]) -> list[bytes]:
        lines[6] = lines[6][:-5]
        return lines

    ran = corrupt(recorded, tmp_path, "garbled", garble)
    assert ran.code == 1 and "line 7: not valid JSON" in ran.out and "FAILED: 1 problem in" in ran.out

    events = recorded.events
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    call_line = next(e.seq for e in events if isinstance(e, AssistantEvent) and e.seq < result.seq) + 1

    def drop_result(lines: list[bytes]) -> list[bytes]:
        # the result goes; a later line takes its seq so only the pairing is wrong
        kept = [json.loads(line) for i, line in enumerate(lines) if i != result.seq]
        for i, record in enumerate(kept):
            record["seq"] = i
        return [json.dumps(r).encode() for r in kept]

    ran = corrupt(recorded, tmp_path, "unanswered", drop_result)
    assert ran.code == 1
    assert f"line {call_line}: tool_use {events[call_line - 1].content[-1]['id']} (write_file) has no tool_result" in ran.out  # type: ignore[attr-defined]

    def gap(lines: list[bytes]) -> list[bytes]:
        return lines[:9] + lines[10:]

    ran = corrupt(recorded, tmp_path, "gap", gap)
    assert ran.code == 1 and "line 10: seq 10 follows 8 (gap)" in ran.out

    def newer(lines: list[bytes]) -> list[bytes]:
        lines[3] = lines[3].replace(b'{"v":1,', b'{"v":2,', 1)
        return lines

    ran = corrupt(recorded, tmp_path, "newer", newer)
    assert ran.code == 1 and "line 4: written by a newer scribe (log format v2" in ran.out
    data = json.loads(recorded.log_cmd("verify", "--json", str(tmp_path / "newer.jsonl")).out)
    assert data["ok"] is False and data["problems"] == [
        {"line": 4, "severity": "error", "message": "written by a newer scribe (log format v2; this scribe reads v1)"}]


def test_verify_warns_but_passes_on_a_torn_line_and_an_open_call_at_the_end(recorded: Recorded, tmp_path: Path) -> None:
    lines = recorded.log.read_bytes().split(b"\n")[:-1]
    last_call = max(i for i, line in enumerate(lines) if b'"type":"tool_use"' in line and b'"assistant"' in line)
    path = tmp_path / "stopped.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines[: last_call + 2]) + lines[last_call + 2][:30])
    adopt(path)  # its whole lines sealed, as a writer killed mid-line leaves them
    ran = recorded.log_cmd("verify", str(path))
    assert ran.code == 0, ran.out
    warnings = ran.out.splitlines()[:-1]
    assert len(warnings) == 2 and all(w.startswith("warning: line ") for w in warnings)
    assert "is still open at the end of the log" in warnings[0] and f"line {last_call + 1}:" in warnings[0]
    assert f"line {last_call + 3}: torn last line (30 bytes" in warnings[1]
    assert ran.out.splitlines()[-1].startswith(f"ok: {last_call + 3} lines, 2 warnings")


# -- startup -------------------------------------------------------------------------------------


def test_log_commands_never_import_the_sdk(recorded: Recorded) -> None:
    code = (
        "import sys\n"
        "from scribe.cli.app import app\n"
        "for args in " + repr([["log", c] for c in ("list", "show", "stats", "prompt", "verify", "tail")]
                              + [["log", "search", "notes"]]) + ":\n"
        "    app(args, prog_name='scribe', standalone_mode=False)\n"
        "print('SDK LOADED' if 'anthropic' in sys.modules else 'no sdk', file=sys.stderr)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], cwd=recorded.workspace, env=recorded.env,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.strip().splitlines()[-1] == "no sdk"


def test_show_gives_git_notes_and_model_events_one_readable_line(workspace: Path, tmp_path: Path) -> None:
    from scribe.log.events import GitCommitEvent, GitUndoEvent, ModelSwitchEvent, NotesEvent, SessionEvent

    path = workspace / ".scribe" / "sessions" / "20260101-000000-abcdef.jsonl"
    with LogWriter.create(path) as log:
        log.append(SessionEvent, **header_fields(id=path.stem, cwd=str(workspace), system="s"))
        log.append(GitCommitEvent, sha="a" * 40, message="scribe: add greet\n\nScribe-Session: x",
                   files=["greet.py"], parent="b" * 40, skipped={"notes.txt": "changed outside scribe"})
        log.append(GitUndoEvent, sha="a" * 40, files=["greet.py"], head="b" * 40)
        log.append(NotesEvent, path=".scribe/notes.md", text="- tabs [from x#1]\n", upto=1, entries=1, model="h")
        log.append(ModelSwitchEvent, model="claude-opus-test")
    ran = run_scribe(["log", "show"], workspace, scribe_env("http://127.0.0.1:9", tmp_path))
    assert ran.code == 0, ran.err
    assert "git commit aaaaaaaaaa · scribe: add greet · greet.py" in ran.out
    assert "left out notes.txt: changed outside scribe" in ran.out
    assert "git undo of aaaaaaaaaa · HEAD back at bbbbbbbbbb · greet.py" in ran.out
    assert "notes curated · 1 entry ·" in ran.out and "- tabs [from x#1]" in ran.out
    assert "model switched to claude-opus-test" in ran.out


def test_a_session_is_found_by_any_part_of_its_id_that_only_it_has(workspace: Path, home: Path) -> None:
    state = workspace / ".scribe"
    ids = ["20261203-033145-9a3656", "20261203-041512-77c0de", "20261204-051146-9a3657"]
    for session_id in ids:
        make_session(state, session_id, workspace)
    env = scribe_env(NO_API, home)

    def shown(part: str) -> Ran:
        return run_scribe(["log", "show", part, "--json"], workspace, env)

    for part, wanted in [("033145", ids[0]), ("77c0", ids[1]), ("9a3657", ids[2]), ("20261203-04", ids[1])]:
        ran = shown(part)
        assert ran.code == 0, (part, ran.err)
        assert [e["id"] for e in ran.json() if e["type"] == "session"] == [wanted], (part, ran.out[:300])
    several = shown("9a365")
    assert several.code == 2 and several.out == ""
    assert several.err.strip() == f"scribe: '9a365' matches 2 sessions ({ids[0]}, {ids[2]}); give more of the id"
    assert shown("20261203").err.strip().startswith("scribe: '20261203' matches 2 sessions")  # a prefix first
    assert shown("zzz").code == 2
