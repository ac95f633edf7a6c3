"""Reopening a session whose raw tail is longer than a reopen holds (a log that was never
compressed): the oldest raw events stay in the file and become model-free observations before
anything renders, every raw event covered once, and the session renders exactly what a full
read of its log renders. The bound is lowered here so that a small log crosses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from scribe.agent import unheld
from scribe.agent.config import Settings
from scribe.agent.session import Session, open_session, start_session
from scribe.context import checkpoint
from scribe.context.checkpoint import checkpoint_path, reopen
from scribe.context.render import canonical_json, render
from scribe.log.events import (
    EXTRACTIVE_MODEL,
    AssistantEvent,
    Event,
    ObservationEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import read_log
from scribe.log.store import describe
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
