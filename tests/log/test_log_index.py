"""The index beside the logs (log/index.py): derived, never the truth. Deleting it changes no
command's output, a stale one is folded anew from the log, and processes sharing it agree."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest

from builders import header_fields
from conftest import CORRUPT_ON_PURPOSE
from helpers import SCRIBE, Ran, run_scribe, scribe_env
from scribe.context.stats import summarize
from scribe.context.tokens import event_tokens
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import SessionEvent, UsageEvent, UserEvent
from scribe.log.jsonl import LogWriter, read_log
from scribe.log.pricing import price_usage
from scribe.tools.pattern import BoundedPattern, PatternTooSlow

NO_API = "http://127.0.0.1:9"  # log commands never call the model

COMMANDS = [
    ["list"], ["list", "--all", "--json"],
    ["stats"], ["stats", "--json"],
    ["stats", "--by", "day"], ["stats", "--by", "model", "--json"], ["stats", "--by", "session", "--all"],
    ["search", "--words", "hello index"], ["search", "--words", "nothing-here-at-all"],
    ["search", "-w", "PLEASE", "--json"], ["search", "hello-[a-z]+"],
]


def index_files(workspace: Path) -> list[Path]:
    return sorted((workspace / ".scribe").glob("index.sqlite3*"))


def outputs(workspace: Path, env: dict[str, str]) -> list[Ran]:
    return [run_scribe(["log", *args], workspace, env, timeout=60) for args in COMMANDS]


def hand_written(path: Path, *, cwd: str, calls: int, text: str = "please say hello", torn: bool = False) -> None:
    with LogWriter.create(path) as log:
        log.append(SessionEvent, **header_fields(id=path.stem, created="2026-01-02T03:04:05.000Z", cwd=cwd,
                                                 model="claude-sonnet-4-5", scribe_version="test", system="s",
                                                 prompt_hash="0"))
        for n in range(calls):
            log.append(UserEvent, text=f"{text} {n}")
            log.append(UsageEvent, purpose="agent", model="claude-sonnet-4-5", input=100 + n, cache_read=1000,
                       cache_write=10, output=20 + n)
    if torn:
        with path.open("ab") as fh:
            fh.write(b'{"v":1,"seq":99,"ts":"2026-01-02T03:04:06.000Z","type":"us')


@pytest.fixture
def sessions(workspace: Path, home: Path) -> Path:
    """Two sessions run by the real executable, and two written by hand: one damaged (a line
    that is not JSON, a torn last line), one from another workspace."""
    replies = [Reply([text_block("Saying it."), tool_use_block("run_command", {"command": "echo hello-index"})]),
               Reply.text("It printed hello-index."), Reply.text("noted")]
    with FakeMessagesServer(replies) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "please say hello index"], workspace, env).code == 0
        assert run_scribe(["run", "remember that"], workspace, env).code == 0
    folder = workspace / ".scribe" / "sessions"
    (folder / CORRUPT_ON_PURPOSE).touch()
    damaged = folder / "20260102-030405-d4d4d4.jsonl"
    hand_written(damaged, cwd=str(workspace), calls=3, torn=True)
    lines = damaged.read_bytes().split(b"\n")
    damaged.write_bytes(b"\n".join([*lines[:3], b"{not json", *lines[3:]]))
    hand_written(folder / "20260102-030406-e5e5e5.jsonl", cwd="/elsewhere", calls=2)
    return workspace


def test_deleting_the_index_changes_no_commands_output(sessions: Path, home: Path) -> None:
    env = scribe_env(NO_API, home)
    assert not index_files(sessions)
    built = outputs(sessions, env)
    assert index_files(sessions), "the first log command builds the index"
    assert built[0].code == 0 and "20260102-030405-d4d4d4" in built[0].out
    assert "1 unreadable line skipped, torn last line" in built[0].out
    assert built[2].code == 0 and built[2].out.startswith("session ") and built[3].json()["per_call"]
    assert built[7].code == 0 and "hello-index" in built[7].out
    assert built[8].code == 1 and built[8].out == ""
    warm = outputs(sessions, env)
    for path in index_files(sessions):
        path.unlink()
    rebuilt = outputs(sessions, env)
    assert built == warm == rebuilt
    # and a broken index file is set aside, not trusted and not fatal
    for path in index_files(sessions):
        path.unlink()
    (sessions / ".scribe" / "index.sqlite3").write_bytes(b"this is not a database" * 100)
    assert outputs(sessions, env) == built


def test_words_search_finds_every_word_in_any_case_and_stats_by_sum_each_call(sessions: Path, home: Path) -> None:
    env = scribe_env(NO_API, home)
    hits = run_scribe(["log", "search", "--words", "HELLO index", "--json", "--all"], sessions, env).json()
    assert {h["line"] for h in hits} >= {"please say hello index", "echo hello-index"}
    assert all("hello" in h["line"].lower() or "index" in h["line"].lower() for h in hits)
    everything = run_scribe(["log", "search", "-w", "please", "--all", "--json"], sessions, env).json()
    assert {h["session_id"] for h in everything} >= {"20260102-030405-d4d4d4", "20260102-030406-e5e5e5"}
    by_session = run_scribe(["log", "stats", "--by", "session", "--all", "--json"], sessions, env).json()
    for group in by_session["groups"]:
        path = sessions / ".scribe" / "sessions" / f"{group['session']}.jsonl"
        truth = summarize(path.stem, read_log(path).events, price_usage).figures
        assert (group["calls"], group["input"], group["output"]) == (truth.calls, truth.tokens.input,
                                                                     truth.tokens.output)
        assert group["cost_usd"] == pytest.approx(truth.cost_usd, abs=1e-6)  # as --json rounds it
    assert by_session["total"]["calls"] == sum(g["calls"] for g in by_session["groups"]) == 2 + 1 + 3 + 2


def listed(workspace: Path, home: Path) -> dict[str, dict[str, object]]:
    ran = run_scribe(["log", "list", "--all", "--json"], workspace, scribe_env(NO_API, home))
    assert ran.code == 0, ran.err
    return {row["id"]: row for row in ran.json()}


def test_a_stale_index_is_rebuilt_from_the_log(workspace: Path, home: Path) -> None:
    folder = workspace / ".scribe" / "sessions"
    folder.mkdir(parents=True)
    path = folder / "20260102-030405-a1a1a1.jsonl"
    hand_written(path, cwd=str(workspace), calls=5)
    assert listed(workspace, home)[path.stem]["calls"] == 5
    db = workspace / ".scribe" / "index.sqlite3"

    def texts_rowids() -> list[int]:
        with sqlite3.connect(db) as conn:
            return [r[0] for r in conn.execute("SELECT rowid FROM texts ORDER BY rowid")]

    before = texts_rowids()
    # grown: folded on from the offset the index covers (what it held stays as it was)
    with LogWriter.after(path, last_seq=10, size=path.stat().st_size, torn=b"") as log:
        log.append(UserEvent, text="one more")
        log.append(UsageEvent, purpose="agent", model="claude-sonnet-4-5", input=1, cache_read=2, cache_write=3,
                   output=4)
    row = listed(workspace, home)[path.stem]
    assert (row["calls"], row["turns"]) == (6, 6)
    assert texts_rowids()[:len(before)] == before and len(texts_rowids()) == len(before) + 2
    # shrunk: another session under the same name, shorter
    path.unlink()
    hand_written(path, cwd=str(workspace), calls=2, text="rewritten")
    row = listed(workspace, home)[path.stem]
    assert (row["calls"], row["turns"], row["prompt_tokens"]) == (2, 2, (100 + 1010) + (101 + 1010))
    assert min(texts_rowids()) > max(before), "the session's rows were made anew"
    # the same size, its last line changed: the hash of the last covered line sees it
    data = path.read_bytes()
    at = data.rfind(b'"output":21')
    changed = data[:at] + b'"output":99' + data[at + len(b'"output":21'):]
    assert changed != data and len(changed) == len(data)
    path.write_bytes(changed)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert listed(workspace, home)[path.stem]["output"] == 20 + 99
    # torn, then whole: the torn part is not folded in until its line ends
    with path.open("ab") as fh:
        fh.write(b'{"v":1,"seq":5,"ts":"2026-01-02T03:04:07.000Z","type":"user","text":"la')
    assert listed(workspace, home)[path.stem]["damaged"] == "torn last line"
    with path.open("ab") as fh:
        fh.write(b'te"}\n')
    row = listed(workspace, home)[path.stem]
    assert (row["turns"], row["damaged"]) == (3, None)
    truth = summarize(path.stem, read_log(path).events, price_usage)
    assert row == listed(workspace, home)[path.stem] and row["events"] == truth.events


def test_the_index_is_private_and_shared_by_processes_at_once(sessions: Path, home: Path) -> None:
    env = scribe_env(NO_API, home)
    alone = run_scribe(["log", "search", "-w", "hello", "--all"], sessions, env)
    db = sessions / ".scribe" / "index.sqlite3"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for path in index_files(sessions):
        path.unlink()
    # four processes build it at once: each answers as one alone did, none doubles a hit
    procs = [subprocess.Popen([SCRIBE, "log", "search", "-w", "hello", "--all"], cwd=sessions, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=120) for p in procs]
    assert [(p.returncode, out) for p, (out, _) in zip(procs, results, strict=True)] == [(0, alone.out)] * 4
    assert run_scribe(["log", "search", "-w", "hello", "--all"], sessions, env).out == alone.out


def test_an_index_in_a_new_state_folder_is_made_private(tmp_path: Path) -> None:
    from scribe.log.index import LogIndex

    state = tmp_path / "state"
    with LogIndex.open(state, price_usage, "key", event_tokens, "estimates"):
        pass
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "index.sqlite3").stat().st_mode) == 0o600


def test_a_log_search_budget_is_each_lines_own() -> None:
    # what a long search of a large log has spent in all does not count against the next line
    pattern = BoundedPattern("hello", 0.5, each_search=True)
    pattern.spent_s = 3600.0
    assert pattern.search("say hello") is not None
    whole = BoundedPattern("hello", 0.5)
    whole.spent_s = 3600.0
    with pytest.raises(PatternTooSlow):
        whole.search("say hello")
