"""`scribe log stats` of one session answered from the index (log/index_stats.py) when the index
covers the log: what it prints is what reading the whole log prints, a log appended behind the
index is folded in first, and a damaged log is still read whole (its notes name each line)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from builders import header_fields
from conftest import CORRUPT_ON_PURPOSE
from helpers import Ran, adopt, run_scribe, scribe_env
from scribe.context.stats import session_stats
from scribe.log.events import (
    EXTRACTIVE_MODEL,
    AssistantEvent,
    ErrorEvent,
    NotesEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import LogWriter, read_log
from scribe.log.pricing import price_usage

NO_API = "http://127.0.0.1:9"  # log commands never call the model
SONNET, HAIKU, LOCAL = "claude-sonnet-4-5", "claude-haiku-4-5", "local-llama-unpriced"


def turns(log: LogWriter, first: int, count: int) -> None:
    """Turns whose dollars are not round, with side calls of every purpose, observations (one
    reaching past its own seq, one made without a model), failures and a model with no price."""
    for n in range(first, first + count):
        start = log.next_seq
        log.append(UserEvent, text=f"step {n}: " + "word " * (n % 13))
        log.append(AssistantEvent, content=[{"type": "text", "text": f"answer {n} " * (n % 7 + 1)}],
                   stop_reason="end_turn")
        log.append(ToolResultEvent, tool_use_id=f"t{n}", tool="run_command", output="x" * (37 * n % 500))
        log.append(UsageEvent, purpose="agent", model=SONNET if n % 5 else LOCAL, input=17 + n * 3,
                   cache_read=1234 + 71 * n, cache_write=n % 4 * 333, output=29 + n, latency_ms=n)
        if n % 4 == 0:
            log.append(UsageEvent, purpose="observer", model=HAIKU, input=901 + n, cache_read=0, cache_write=11,
                       output=97 + n)
            log.append(ObservationEvent, text=f"🔴 turn {n} " * 3, seq_from=start, seq_to=log.next_seq + 2,
                       tokens=19 + n, model=HAIKU if n % 8 else EXTRACTIVE_MODEL)
        if n % 9 == 0:
            log.append(UsageEvent, purpose="reflector", model=SONNET, input=333, cache_read=n, cache_write=0,
                       output=41)
            log.append(ReflectionEvent, text=f"reflected {n}", supersedes=[start], tokens=23, model=SONNET)
            log.append(ErrorEvent, kind="reflect_backoff", message=f"reflection {n} refused", attempts=3)
        if n % 11 == 0:
            log.append(ErrorEvent, kind="observe_backoff", message=f"observer {n} failed")
            log.append(UsageEvent, purpose="curator", model=HAIKU, input=77, cache_read=5, cache_write=3, output=8)
            log.append(NotesEvent, path="notes.md", text="- a fact", upto=start, entries=1, model=HAIKU)


def varied_session(path: Path, cwd: str) -> None:
    with LogWriter.create(path) as log:
        log.append(SessionEvent, **header_fields(id=path.stem, created="2026-01-02T03:04:05.000Z", cwd=cwd,
                                                 model=SONNET, scribe_version="test", system="s", prompt_hash="0"))
        turns(log, 1, 60)
    again(path, 14, 90)


def again(path: Path, seq: int, words: int) -> None:
    """A user line of a seq already taken (one the first observation covers): the later event's
    estimate stands for that seq."""
    with path.open("ab") as fh:
        fh.write(b'{"v":1,"seq":%d,"ts":"2026-01-02T03:05:00.000Z","type":"user","text":"%s"}\n'
                 % (seq, b"long " * words))
    adopt(path)  # a line written by hand: sealed, so that the writer below may append after it


def test_stats_from_the_index_print_what_reading_the_log_whole_prints(workspace: Path, home: Path,
                                                                      tmp_path: Path) -> None:
    folder = workspace / ".scribe" / "sessions"
    folder.mkdir(parents=True)
    (folder / CORRUPT_ON_PURPOSE).touch()  # a seq written twice, tool results with no call: on purpose
    path = folder / "20260102-030405-f6f6f6.jsonl"
    varied_session(path, str(workspace))
    env = scribe_env(NO_API, home)
    db = workspace / ".scribe" / "index.sqlite3"

    def from_index() -> Ran:
        return run_scribe(["log", "stats"], workspace, env)

    def read_whole() -> Ran:
        """The same log named by a path outside the sessions folder: always read whole."""
        copy = tmp_path / "elsewhere" / path.name
        copy.parent.mkdir(exist_ok=True)
        shutil.copyfile(path, copy)
        return run_scribe(["log", "stats", str(copy)], workspace, env)

    first = from_index()
    assert first.code == 0, first.err
    assert "+ 12 unpriced" in first.out and "side calls failed" in first.out and "reflections: 6" in first.out
    assert first == read_whole()
    # what it printed is the index's: a figure changed in the index by hand is what it prints
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE sessions SET curator_made = 41")
    assert "41 curations" in from_index().out
    # deleted: built again, the same output
    for index_file in (workspace / ".scribe").glob("index.sqlite3*"):
        index_file.unlink()
    assert from_index() == first
    # appended behind the index: folded in before it answers, never shown stale
    with LogWriter.after(path, last_seq=10_000, size=path.stat().st_size, torn=b"") as log:
        turns(log, 61, 40)
    again(path, 14, 7)
    grown = from_index()
    assert grown != first and grown.code == 0
    assert grown == read_whole()
    assert listed_as_json(path, workspace, env) == as_one_document(path)
    # a torn last line: read whole, its note on stderr as ever
    with path.open("ab") as fh:
        fh.write(b'{"v":1,"seq":20000,"ts":"2026-01-02T03:04:06.000Z","type":"us')
    torn = from_index()
    assert "torn" in torn.err and torn.out == grown.out
    assert torn == read_whole()
    assert listed_as_json(path, workspace, env) == as_one_document(path)


def listed_as_json(path: Path, workspace: Path, env: dict[str, str]) -> str:
    ran = run_scribe(["log", "stats", "--json", path.stem], workspace, env)
    assert ran.code == 0, ran.err
    return ran.out


def as_one_document(path: Path) -> str:
    """`log stats --json` as one JSON document made of every call held at once."""
    figures = session_stats(read_log(path).events, price_usage)
    assert figures.calls, "the calls are listed"
    return json.dumps({"session_id": path.stem, "log": str(path), **figures.as_dict()}, ensure_ascii=False,
                      indent=2) + "\n"


def test_other_prices_or_estimates_are_never_mixed_with_the_index_s(workspace: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from scribe.context.tokens import event_tokens
    from scribe.log.index import LogIndex

    monkeypatch.setattr("scribe.log.index.REPRICE_BATCH", 5)  # priced anew a few calls at a time

    folder = workspace / ".scribe" / "sessions"
    folder.mkdir(parents=True)
    (folder / CORRUPT_ON_PURPOSE).touch()
    path = folder / "20260102-030405-f7f7f7.jsonl"
    varied_session(path, str(workspace))
    state = workspace / ".scribe"
    with LogIndex.open(state, price_usage, "list", event_tokens, "estimated") as index:
        index.refresh_one(path)
        listed = index.stats(path.stem)
    assert listed is not None and listed.raw_tokens > 0 and listed.total.unpriced == 12
    # other prices: every call priced anew, per purpose too
    with LogIndex.open(state, lambda usage: (1.0, 3.0), "flat", event_tokens, "estimated") as index:
        flat = index.stats(path.stem)
    assert flat is not None and flat.total.unpriced == 0 and flat.total.calls == listed.total.calls > 5
    assert {p: (f.calls, f.cost_usd, f.uncached_cost_usd) for p, f in flat.by_purpose.items()} == {
        p: (f.calls, 1.0 * f.calls, 3.0 * f.calls) for p, f in listed.by_purpose.items()}
    # estimates made another way: the session is folded anew with them
    with LogIndex.open(state, price_usage, "list", lambda event: 2, "two a event") as index:
        assert index.stats(path.stem) is None, "nothing kept of the other estimates"
        index.refresh_one(path)
        two = index.stats(path.stem)
    assert two is not None and two.total == listed.total
    events = read_log(path).events
    seqs = {e.seq for e in events}
    covered = sum(len(seqs & set(range(e.seq_from, e.seq_to + 1))) for e in events if isinstance(e, ObservationEvent))
    assert two.raw_tokens == 2 * covered != listed.raw_tokens
