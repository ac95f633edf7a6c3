"""The log's views tell the truth: no dollar figure where nothing was priced, the session a bare
command picks has something to show, the page and `scribe log stats` say the same counts, every
compression shows what it folded (the line after it, `log show --compressions`, the page), and
`log tail -f` follows the session being written, naming it, and the next one started."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from builders import header_fields
from conftest import make_repository
from helpers import SCRIBE, Ran, events_of, run_scribe, scribe_env, session_logs
from scribe.cli.log.page.document import session_page
from scribe.context.compressions import replaced_raw
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, tool_use_block
from scribe.log.events import (
    EXTRACTIVE_MODEL,
    AssistantEvent,
    Event,
    InterruptEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    UsageEvent,
    UserEvent,
    now_iso,
)
from scribe.log.jsonl import LogWriter

NO_API = "http://127.0.0.1:9"  # log commands never call a model


def write_session(state: Path, session_id: str, cwd: Path, *, users: int = 0, calls: int = 0,
                  model: str = "claude-sonnet-5-5") -> Path:
    """A session log written by hand: its session event, then `users` messages, then `calls`
    agent calls of `model` (one answer and its usage each)."""
    path = state / "sessions" / f"{session_id}.jsonl"
    with LogWriter.create(path) as writer:
        writer.append(SessionEvent, **header_fields(id=session_id, created=now_iso(), cwd=str(cwd), model=model))
        for i in range(users):
            writer.append(UserEvent, text=f"question {i}")
        for i in range(calls):
            writer.append(AssistantEvent, content=[{"type": "text", "text": f"answer {i}"}], stop_reason="end_turn")
            writer.append(UsageEvent, purpose="agent", model=model, input=100, cache_read=2000, cache_write=50,
                          output=20, latency_ms=5)
    return path


@dataclass
class Sessions:
    workspace: Path
    env: dict[str, str]
    called: str  # a user message and two priced calls, oldest
    failed: str  # a user message and no call (its turn failed before one), later
    empty: str  # its session event alone (the REPL opened and left), latest

    def log(self, *args: str) -> Ran:
        return run_scribe(["log", *args], self.workspace, self.env)


@pytest.fixture
def sessions(tmp_path: Path) -> Sessions:
    workspace = make_repository(tmp_path / "ws")
    state = workspace / ".scribe"
    ids = ["20260101-000000-aaaaaa", "20260101-000001-bbbbbb", "20260101-000002-cccccc"]
    write_session(state, ids[0], workspace, users=1, calls=2)
    write_session(state, ids[1], workspace, users=1)
    write_session(state, ids[2], workspace)
    return Sessions(workspace, scribe_env(NO_API, tmp_path / "home"), *ids)


# -- no figure without a price -----------------------------------------------------------------


def test_a_session_with_no_call_shows_no_dollars_and_an_empty_one_is_not_listed(sessions: Sessions) -> None:
    rows = sessions.log("list", "--json")
    assert rows.code == 0, rows.err
    listed = {row["id"]: row for row in rows.json()}
    assert list(listed) == [sessions.called, sessions.failed]  # the empty one is left out, and said so
    assert "1 session in which nothing was asked and no model was called left out (--empty lists them)" in rows.err
    failed = listed[sessions.failed]
    assert failed["calls"] == 0 and failed["turns"] == 1
    assert (failed["cost_usd"], failed["uncached_cost_usd"], failed["saved_usd"]) == (None, None, None)
    assert listed[sessions.called]["cost_usd"] > 0

    every = {row["id"]: row for row in sessions.log("list", "--json", "--empty").json()}
    assert list(every) == [sessions.called, sessions.failed, sessions.empty] and every[sessions.empty]["cost_usd"] is None

    table = sessions.log("list").out.splitlines()
    [row] = [line for line in table if line.startswith(sessions.failed)]
    assert "$" not in row and "0.0%" not in row and row.split()[-2:] == ["-", "-"], row  # hit rate and cost
    assert not any(line.startswith(sessions.empty) for line in table)
    assert "$" in next(line for line in table if line.startswith(sessions.called))


def test_stats_of_a_session_with_no_call_give_no_cost(sessions: Sessions) -> None:
    data = sessions.log("stats", sessions.failed, "--json").json()
    assert data["total"]["calls"] == 0
    assert (data["total"]["cost_usd"], data["total"]["uncached_cost_usd"], data["total"]["saved_usd"]) == (None,) * 3
    text = sessions.log("stats", sessions.failed).out
    assert "$" not in text and "no model calls yet" in text


def test_a_bare_stats_and_show_pick_the_latest_session_with_something_to_show(sessions: Sessions) -> None:
    # the latest session is the empty one; the latest with a model call is the oldest
    assert sessions.log("stats", "--json").json()["session_id"] == sessions.called
    assert "session " + sessions.called in sessions.log("stats").out
    shown = sessions.log("show").out  # the latest in which anything happened
    assert f"session {sessions.failed}" in shown and "question 0" in shown
    # named, any session is shown as it is
    assert sessions.log("stats", sessions.empty, "--json").json()["session_id"] == sessions.empty


def test_the_page_shows_no_dollars_for_a_turn_without_a_call(tmp_path: Path) -> None:
    """A turn cancelled before its first call, between turns whose calls are unpriced."""
    events: list[Event] = [SessionEvent(seq=0, ts="2026-01-01T10:00:00Z",
                                        **header_fields(model="local-model", created="2026-01-01T10:00:00Z"))]

    def add(cls: type[Event], **fields: Any) -> None:
        events.append(cls(seq=len(events), ts=f"2026-01-01T10:00:{len(events):02d}Z", **fields))  # type: ignore[call-arg]

    add(UserEvent, text="first")
    add(AssistantEvent, content=[{"type": "text", "text": "one"}], stop_reason="end_turn")
    add(UsageEvent, purpose="agent", model="local-model", input=10, cache_read=0, cache_write=0, output=2)
    add(UserEvent, text="cancelled before any call")
    add(InterruptEvent, tool_use_ids=[])
    add(UserEvent, text="third")
    add(AssistantEvent, content=[{"type": "text", "text": "three"}], stop_reason="end_turn")
    add(UsageEvent, purpose="agent", model="local-model", input=10, cache_read=0, cache_write=0, output=2)
    page = session_page("s", events)
    costs = [unescape(text) for text in re.findall(r'<span class="turn-cost">(.*?)</span>', page)]
    assert costs == ["1 call · unpriced", "no model call", "1 call · unpriced"]
    headline = re.search(r'<dl class="headline">.*?</dl>', page)
    assert headline and "$" not in headline.group(0)


# -- a real session that compressed: the line, `log show --compressions`, the page, the stats ---


def big(k: int) -> str:
    return f"message {k}: " + " ".join(f"word{k}-{i}" for i in range(320))


@dataclass
class Compressed:
    workspace: Path
    env: dict[str, str]
    said: list[str]  # what each `scribe run` wrote on stderr

    @property
    def events(self) -> list[Event]:
        return events_of(session_logs(self.workspace)[0])

    def log(self, *args: str) -> Ran:
        return run_scribe(["log", *args], self.workspace, self.env)


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> Compressed:
    """Three runs and a `scribe reflect`: observations by the observer, a reflection, then an
    observer whose answers are prose (a model-free summary takes their place)."""
    root = tmp_path_factory.mktemp("compressed")
    workspace, home = make_repository(root / "ws"), root / "home"
    home.mkdir()
    agent = [reply for _ in range(3) for reply in (
        *(Reply([tool_use_block("run_command", {"command": f"seq {n} 3000"})]) for n in range(1, 4)),
        Reply.text("Counted."))]
    model = SideCallModel(agent)
    said = []
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_OBSERVE_TOKENS="1500", SCRIBE_REFLECT_TOKENS="500",
                         SCRIBE_OBSERVE_ON_PAYBACK="false", SCRIBE_WATCH_FILES="0")
        for k in range(2):
            ran = run_scribe(["run", *(["-c"] if k else []), "-p", "full-auto", big(k)], workspace, env)
            assert ran.code == 0, ran.err
            said.append(ran.err)
        assert run_scribe(["reflect"], workspace, env).code == 0
        model.habits.update(observer="prose")
        ran = run_scribe(["run", "-c", "-p", "full-auto", big(9)], workspace, env)
        assert ran.code == 0, ran.err
        said.append(ran.err)
    return Compressed(workspace, scribe_env(NO_API, home), said)


FOLDED = re.compile(r"memory: folded events (\d+)-(\d+) \((\d+) events?, ~[\d,]+ tokens\) into observation (\d+)"
                    r"( without a model)? \(~[\d,]+ tokens\); `scribe log show --compressions` shows them beside it")


def test_run_says_in_one_line_what_each_compression_folded(compressed: Compressed) -> None:
    events = compressed.events
    by_reflect = {e.seq for e in events if isinstance(e, ObservationEvent)} - {
        int(m.group(4)) for err in compressed.said for m in FOLDED.finditer(err)}
    said = [m for err in compressed.said for m in FOLDED.finditer(err)]
    observed = [e for e in events if isinstance(e, ObservationEvent) and e.seq not in by_reflect]
    assert len(observed) >= 2 and any(e.model == EXTRACTIVE_MODEL for e in observed)  # the runs compressed
    assert [(int(m.group(1)), int(m.group(2)), int(m.group(4)), bool(m.group(5))) for m in said] == [
        (o.seq_from, o.seq_to, o.seq, o.model == EXTRACTIVE_MODEL) for o in observed]
    for m in said:
        first, last = int(m.group(1)), int(m.group(2))
        assert int(m.group(3)) == sum(first <= e.seq <= last and replaced_raw(e) for e in events)


def test_show_compressions_puts_each_chunk_beside_the_events_it_replaced(compressed: Compressed) -> None:
    events = compressed.events
    chunks = [e for e in events if isinstance(e, ObservationEvent | ReflectionEvent)]
    assert any(isinstance(c, ReflectionEvent) for c in chunks)
    found = compressed.log("show", "--compressions", "--json")
    assert found.code == 0, found.err
    shown = found.json()
    assert [c["seq"] for c in shown] == [c.seq for c in chunks]
    stats = compressed.log("stats", "--json").json()["compression"]
    observations = [c for c in shown if c["kind"] == "observation"]
    # the tokens before are what `log stats` counts as the raw tokens the observations stand for
    assert sum(c["tokens_before"] for c in observations) == stats["raw_tokens"]
    assert sum(c["tokens_after"] for c in observations) == stats["observation_tokens"]
    for chunk, record in zip(chunks, shown, strict=True):
        assert record["chunk"]["text"] == chunk.text and record["model_free"] == (chunk.model == EXTRACTIVE_MODEL)
        replaced = [e["seq"] for s in record["stretches"] for e in s["events"]]
        if isinstance(chunk, ObservationEvent):
            assert replaced == [e.seq for e in events if chunk.seq_from <= e.seq <= chunk.seq_to and replaced_raw(e)]
            assert record["recall"] == {"seq_from": chunk.seq_from, "seq_to": chunk.seq_to}
            for stretch in record["stretches"]:  # each turn's events, with the recall call that reads them back
                seqs = [e["seq"] for e in stretch["events"]]
                assert stretch["recall"] == {"seq_from": seqs[0], "seq_to": seqs[-1]}
        else:
            assert replaced == sorted(chunk.supersedes)

    text = compressed.log("show", "--compressions").out
    first = next(c for c in chunks if isinstance(c, ObservationEvent))
    assert f"[{first.seq}] observation of events {first.seq_from}-{first.seq_to} · " in text
    assert f"what it replaced (recall seq_from={first.seq_from} seq_to={first.seq_to} reads them back whole):" in text
    for line in first.text.splitlines():
        assert f"        {line}" in text
    user = next(e for e in events if isinstance(e, UserEvent))
    assert f"            [{user.seq}] user · " in text and "model-free" in text


def test_the_page_and_log_stats_say_the_same_counts(compressed: Compressed) -> None:
    stats_text = compressed.log("stats").out
    stats = compressed.log("stats", "--json").json()
    page = compressed.log("html", "-o", "-").out

    def said(fragment: str) -> str:
        return " ".join(unescape(re.sub(r"<[^>]+>", " ", fragment)).split())

    figures = said(re.search(r'<div id="figures-body">.*?</div></div>', page, re.S).group(0))  # type: ignore[union-attr]
    for line in stats_text.splitlines()[1:]:  # every line of `log stats` is on the page in its words
        if not line.startswith(("purpose", "───")) and not re.match(r"\w+ +[\d,]+ ", line):
            assert " ".join(line.split()) in figures, line
    total = stats["total"]
    assert f"model calls {total['calls']:,}" in figures
    turns = [int(n) for n in re.findall(r'<span class="turn-cost">(\d+) calls?', page)]
    assert sum(turns) == total["calls"]
    # the memory line counts what models made and the compression line both: they add up
    memory = stats["memory"]
    observed = re.search(r"compression: (\d+) observations \((\d+) of them model-free\)", stats_text)
    assert observed and int(observed.group(1)) == stats["compression"]["observations"]
    assert int(observed.group(1)) - int(observed.group(2)) == memory["observations"]
    assert f"memory: by a model {memory['observations']} observations" in " ".join(stats_text.split())
    # each compression on the page, as many as the stats count, the model-free ones said so
    compressions = re.findall(r'<details class="compression (observation|reflection)" id="c-(\d+)">(.*?)</details>',
                              page, re.S)
    kinds = [kind for kind, _, _ in compressions]
    assert kinds.count("observation") == stats["compression"]["observations"]
    assert kinds.count("reflection") == stats["compression"]["reflections"]
    assert sum("model-free" in said(body.split("</summary>")[0]) for _, _, body in compressions) == memory["model_free"]


def test_the_page_shows_each_compression_beside_the_events_it_replaced(compressed: Compressed) -> None:
    events = compressed.events
    page = compressed.log("html", "-o", "-").out
    for chunk in (e for e in events if isinstance(e, ObservationEvent)):
        block = re.search(rf'<details class="compression observation" id="c-{chunk.seq}">(.*?)</details>', page, re.S)
        assert block, chunk.seq
        said, replaced = block.group(1).split('<div class="replaced">')
        assert unescape(re.search(r"<pre>(.*?)</pre>", said, re.S).group(1)) == chunk.text  # type: ignore[union-attr]
        assert f"recall seq_from={chunk.seq_from} seq_to={chunk.seq_to}" in unescape(replaced)
        assert [int(s) for s in re.findall(r'<a class="seq" href="#e-(\d+)">', replaced)] == [
            e.seq for e in events if chunk.seq_from <= e.seq <= chunk.seq_to and replaced_raw(e)]


# -- tail -f -----------------------------------------------------------------------------------


class Watch:
    """`scribe log tail -f` as a process, its stdout and stderr lines collected by threads."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([SCRIBE, "log", "tail", "-f", "--raw", "--poll", "0.05"], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out: queue.Queue[bytes] = queue.Queue()
        self.err: queue.Queue[bytes] = queue.Queue()
        for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, lines), daemon=True).start()

    @staticmethod
    def _read(stream: Any, lines: queue.Queue[bytes]) -> None:
        for line in stream:
            lines.put(line)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout=10)


def test_tail_follow_names_the_session_being_written_and_moves_to_the_next(tmp_path: Path) -> None:
    workspace = make_repository(tmp_path / "ws")
    state = workspace / ".scribe"
    live = state / "sessions" / "20260101-000000-aaaaaa.jsonl"
    with LogWriter.create(live) as writer:  # this process writes it: its lock is held
        writer.append(SessionEvent, **header_fields(id=live.stem, created=now_iso(), cwd=str(workspace)))
        writer.append(UserEvent, text="still working")
        # then a headless run ends: the latest activity of the workspace, in a session no one writes
        write_session(state, "20260101-000001-bbbbbb", workspace, users=1, calls=1)
        watch = Watch(workspace, scribe_env(NO_API, tmp_path / "home"))
        try:
            named = watch.err.get(timeout=15).decode()
            assert named.startswith(f"scribe: following session {live.stem}, which process {os.getpid()} is writing")
            assert [json.loads(watch.out.get(timeout=15))["seq"] for _ in range(2)] == [0, 1]
            writer.append(UserEvent, text="appended while followed")
            assert json.loads(watch.out.get(timeout=15))["text"] == "appended while followed"

            later = write_session(state, "20260101-000002-cccccc", workspace, users=1)  # started later here
            assert watch.err.get(timeout=15).decode().strip() == (
                f"scribe: session {later.stem} started in this workspace; following it now")
            assert [json.loads(watch.out.get(timeout=15)) for _ in range(2)] == [
                json.loads(line) for line in later.read_bytes().splitlines()]
            # a session of another workspace sharing the state folder (SCRIBE_HOME) is not this one's
            write_session(state, "20260101-000003-dddddd", make_repository(tmp_path / "other"), users=1)
            last = write_session(state, "20260101-000004-eeeeee", workspace)
            assert watch.err.get(timeout=15).decode().strip() == (
                f"scribe: session {last.stem} started in this workspace; following it now")
            assert json.loads(watch.out.get(timeout=15))["id"] == last.stem
        finally:
            assert watch.stop() == 0
