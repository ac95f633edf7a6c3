"""Reopening a session whose raw tail is longer than a reopen holds (a log that was never
compressed): the oldest raw events stay in the file and become model-free observations before
anything renders, every raw event covered once, and the session renders exactly what a full
read of its log renders. The bound is lowered here so that a small log crosses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NO_API, adopt, run_scribe, scribe_env
from scribe.agent.session import unheld
from scribe.agent.session.session import Session
from scribe.agent.session.start import open_session, start_session
from scribe.context import checkpoint
from scribe.context.checkpoint import checkpoint_path, reopen
from scribe.context.render import canonical_json, render
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import (
    EXTRACTIVE_MODEL,
    AssistantEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import LogWriter, read_log
from scribe.log.store import describe
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions

HELD = 40_000  # bytes a reopen holds here (RAW_HELD_BYTES)


def never_compressed(workspace: Path, turns: int) -> Path:
    session = start_session(workspace, Settings(), tool_definitions(builtin_tools()))
    for n in range(turns):
        session.append(UserEvent, text=f"step {n}: run the tests of part {n}")
        call = f"toolu_{n:04d}"
        session.append(AssistantEvent, content=[{"type": "tool_use", "id": call, "name": "run_command",
                                                 "input": {"command": f"pytest tests/part_{n}"}}],
                       stop_reason="tool_use")
        session.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=9, cache_read=900,
                       cache_write=90, output=30)
        session.append(ToolResultEvent, tool_use_id=call, tool="run_command", output=f"part {n} passed\n" * 40)
        session.append(AssistantEvent, content=[{"type": "text", "text": f"part {n} passes"}], stop_reason="end_turn")
    session.close()
    return session.path


def request_bytes(events: list[Event] | Session) -> str:
    if isinstance(events, Session):
        return canonical_json(render(events.events, events.chunks).body())
    return canonical_json(render(events).body())


def held_bytes(session: Session) -> int:
    first = session.events.place_of(session.events.start)[0]
    return session.path.stat().st_size - first


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "RAW_HELD_BYTES", HELD)
    monkeypatch.setattr(unheld, "SPAN_TOKENS", 6_000)


def test_a_raw_tail_past_the_bound_is_summarised_and_the_rest_held(workspace: Path, small_bound: None) -> None:
    path = never_compressed(workspace, turns=150)
    assert path.stat().st_size > 5 * HELD
    checkpoint_path(path).unlink()  # as a log an older scribe left: read whole
    session = open_session(describe(path))
    events = read_log(path).events
    stubs = [e for e in events if isinstance(e, ObservationEvent)]
    assert len(stubs) >= 3 and all(s.model == EXTRACTIVE_MODEL for s in stubs)
    # Every raw event before the held part is covered, once, in order.
    assert stubs[0].seq_from == 1 and all(b.seq_from == a.seq_to + 1 for a, b in zip(stubs, stubs[1:], strict=False))
    first_held = session.events[session.events.start]
    assert session.events.start > 0 and stubs[-1].seq_to >= first_held.seq - 1
    assert held_bytes(session) < HELD + 20_000  # the stubs were appended after the held part
    assert any("too many raw events to hold" in n for n in session.notices)
    assert request_bytes(session) == request_bytes(events)  # the prompt of the log as it now is
    expected = request_bytes(session)
    session.close()
    again = open_session(describe(path))  # from the checkpoint: nothing more to summarise
    assert reopen(path).unheld is None and again.notices == []
    assert request_bytes(again) == expected and len(read_log(path).events) == len(events)
    again.close()
    checkpoint_path(path).unlink()
    third = open_session(describe(path))  # and read whole again: the same
    assert request_bytes(third) == expected and third.notices == []
    third.close()


def test_a_raw_tail_within_the_bound_is_held_whole(workspace: Path, small_bound: None) -> None:
    path = never_compressed(workspace, turns=8)
    assert path.stat().st_size < HELD
    checkpoint_path(path).unlink()
    log = reopen(path)
    assert log.unheld is None and log.events.start == 0
    session = open_session(describe(path))
    assert not any(isinstance(e, ObservationEvent) for e in read_log(path).events)
    session.close()


def test_a_checkpoint_whose_held_part_grew_past_the_bound_is_read_whole(workspace: Path, small_bound: None) -> None:
    path = never_compressed(workspace, turns=8)  # checkpointed while it was small
    assert reopen(path).from_checkpoint
    session = open_session(describe(path))
    for n in range(120):  # the raw tail grows past the bound in this process
        session.append(UserEvent, text=f"more {n} " + "x" * 400)
    session.close()
    log = reopen(path)
    assert not log.from_checkpoint and log.unheld is not None  # not held from the checkpoint's far-back start
    again = open_session(describe(path))
    assert request_bytes(again) == request_bytes(read_log(path).events)
    again.close()



def test_scribe_run_c_sends_the_same_requests_whatever_the_checkpoint(workspace: Path, home: Path) -> None:
    """Through the real executable: a continued run's requests are the same with a checkpoint
    that covers the log, with one the log grew behind (lines an older scribe appended), and
    with none (the log read whole)."""
    path = never_compressed(workspace, turns=30)
    covered_less = checkpoint_path(path).read_bytes()
    with LogWriter.resume(path, read_log(path)) as older:
        older.append(UserEvent, text="one more, from an older scribe")
        older.append(AssistantEvent, content=[{"type": "text", "text": "noted"}], stop_reason="end_turn")
    grown = path.read_bytes()
    env = scribe_env(NO_API, home, SCRIBE_WATCH_FILES="0")
    sent = []
    for beside in ("stale", "none", "current"):
        path.write_bytes(grown)
        adopt(path)  # put back by hand, the lines the last run appended gone: vouched for again
        checkpoint_path(path).unlink(missing_ok=True)
        if beside == "stale":
            checkpoint_path(path).write_bytes(covered_less)
            assert reopen(path).from_checkpoint  # it is used, and the lines after it folded in
        elif beside == "current":
            open_session(describe(path)).close()  # read whole once, which writes it
            assert reopen(path).from_checkpoint
        with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
            ran = run_scribe(["run", "-c", "and now?"], workspace, env | {"ANTHROPIC_BASE_URL": server.base_url})
            assert ran.code == 0, ran.err
            sent.append([r.json for r in server.requests if r.json is not None])
    assert sent[0] and sent[0] == sent[1] == sent[2]
    assert "one more, from an older scribe" in json.dumps(sent[0][-1])


def never_reflected(workspace: Path, observations: int) -> Path:
    """A session whose observer answered every time and whose reflector never did."""
    session = start_session(workspace, Settings(), tool_definitions(builtin_tools()))
    for n in range(observations):
        first = session.writer.next_seq
        session.append(UserEvent, text=f"step {n}")
        session.append(AssistantEvent, content=[{"type": "text", "text": f"did {n}"}], stop_reason="end_turn")
        session.append(ObservationEvent, text=f"🔴 the person asked for step {n}\n🟡 step {n} was done",
                       seq_from=first, seq_to=first + 1, tokens=400, model="claude-haiku-4-5")
    session.append(UserEvent, text="and now?")
    session.close()
    return session.path


def test_chunks_past_what_any_request_holds_are_condensed_on_opening(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unheld, "CHUNKS_HELD_TOKENS", 10_000)
    monkeypatch.setattr(unheld, "REFLECTION_SPAN_TOKENS", 4_000)
    path = never_reflected(workspace, observations=60)  # 24,000 tokens of chunks
    session = open_session(describe(path))
    events = read_log(path).events
    reflections = [e for e in events if isinstance(e, ReflectionEvent)]
    assert len(reflections) >= 3 and all(r.model == EXTRACTIVE_MODEL for r in reflections)
    chunks, _ = session.chunks.update(session.events)
    assert sum(c.tokens for c in chunks) <= 10_000
    observed = [e.seq for e in events if isinstance(e, ObservationEvent)]
    superseded = [s for r in reflections for s in r.supersedes]
    assert superseded == observed[:len(superseded)]  # the oldest, in order, each once
    assert [c.seq for c in chunks] == [r.seq for r in reflections] + observed[len(superseded):]
    assert any("condensed without a model" in n for n in session.notices)
    assert request_bytes(session) == request_bytes(events)
    expected = request_bytes(session)
    session.close()
    for delete in (False, True):  # from the checkpoint, then read whole: nothing more to condense
        if delete:
            checkpoint_path(path).unlink()
        again = open_session(describe(path))
        assert again.notices == [] and request_bytes(again) == expected
        again.close()
