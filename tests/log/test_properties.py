"""Properties over arbitrary input: the reader survives any bytes, and render turns any sequence
of events (crashes, orphans, interrupts in odd places) into a request the API accepts."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import session_header
from scribe.context.render import render
from scribe.fakeapi.validate import validate_request
from scribe.log.codec import from_record, to_record
from scribe.log.events import (
    AssistantEvent,
    Event,
    FileChangeEvent,
    InterruptEvent,
    ToolResultEvent,
    UserEvent,
)
from scribe.log.jsonl import encode, read_log
from scribe.log.open_calls import unanswered_tool_uses

HEADER = session_header(ts="t", created="t", tools=[{"name": "t", "description": "d", "input_schema": {
    "type": "object", "properties": {}}}])

valid_line = st.builds(lambda text: UserEvent(seq=0, ts="t", text=text), st.text(max_size=40))
garbage_line = st.one_of(
    st.binary(max_size=60).filter(lambda b: b"\n" not in b),
    st.just(b'{"v":1,"seq":'),
    st.just(b'{"seq":"x","type":"user"}'),
    st.just(b"[1,2,3]"),
    st.just(b'{"v":99,"seq":1,"ts":"t","type":"user","text":"from the future"}'),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(valid_line.map(lambda e: ("ok", e)), garbage_line.map(lambda b: ("bad", b))), max_size=30),
       st.binary(max_size=40).filter(lambda b: b"\n" not in b))
def test_reader_never_fails_and_accounts_for_every_line(tmp_path: Path, lines: list, tail: bytes) -> None:  # type: ignore[type-arg]
    path = tmp_path / "log.jsonl"
    body = b""
    expected_ok = 0
    for kind, item in lines:
        if kind == "ok":
            body += encode(item)
            expected_ok += 1
        else:
            body += item + b"\n"
    path.write_bytes(body + tail)
    read = read_log(path)
    assert len(read.events) >= expected_ok  # garbage that happens to be a valid event also counts
    non_blank = sum(1 for line in body.split(b"\n") if line.strip())
    assert len(read.events) + sum(p.kind != "torn" for p in read.problems) == non_blank
    assert read.torn_tail == tail
    assert any(p.kind == "torn" for p in read.problems) == bool(tail)


# Arbitrary event sequences, the way a crash, a cancel or a corrupted log could leave them.
ids = st.sampled_from(["a", "b", "c", "d", "e", "f"])
step = st.one_of(
    st.tuples(st.just("user"), st.text(max_size=20)),
    st.tuples(st.just("assistant"), st.lists(st.one_of(st.tuples(st.just("text"), st.text(max_size=15)),
                                                       st.tuples(st.just("tool"), ids)), max_size=4)),
    st.tuples(st.just("result"), ids),
    st.tuples(st.just("interrupt"), st.lists(ids, max_size=3)),
    st.tuples(st.just("change"), st.just("x.py")),
)


def build_events(steps: list) -> list[Event]:  # type: ignore[type-arg]
    events: list[Event] = [HEADER]
    used: set[str] = set()
    generation = 0
    for kind, arg in steps:
        seq = len(events)
        if kind == "user":
            events.append(UserEvent(seq=seq, ts="t", text=arg))
        elif kind == "assistant":
            generation += 1
            content = []
            for block_kind, value in arg:
                if block_kind == "text":
                    content.append({"type": "text", "text": value})
                else:
                    tool_id = f"{value}{generation}"
                    if tool_id not in used:  # the API's ids are unique; keep them so
                        used.add(tool_id)
                        content.append({"type": "tool_use", "id": tool_id, "name": "t", "input": {}})
            events.append(AssistantEvent(seq=seq, ts="t", content=content, stop_reason="tool_use"))
        elif kind == "result":
            events.append(ToolResultEvent(seq=seq, ts="t", tool_use_id=f"{arg}{generation}", tool="t", output=arg))
        elif kind == "interrupt":
            events.append(InterruptEvent(seq=seq, ts="t", tool_use_ids=[f"{i}{generation}" for i in arg]))
        else:
            events.append(FileChangeEvent(seq=seq, ts="t", path=arg, kind="modified"))
    return events


@settings(max_examples=400, deadline=None)
@given(st.lists(step, max_size=30))
def test_render_repairs_any_sequence_into_a_valid_request(steps: list) -> None:  # type: ignore[type-arg]
    events = build_events(steps)
    events.append(UserEvent(seq=len(events), ts="t", text="go on"))  # a call follows a user message
    request = render(events)
    assert validate_request(request.body()) is None
    # and the same after a round trip through the log format
    again = [from_record(json.loads(json.dumps(to_record(e)))) for e in events]
    assert render(again) == request


@settings(max_examples=200, deadline=None)
@given(st.lists(step, max_size=30))
def test_interrupting_the_open_calls_leaves_none_open(steps: list) -> None:  # type: ignore[type-arg]
    events = build_events(steps)
    dangling = unanswered_tool_uses(events)
    events.append(InterruptEvent(seq=len(events), ts="t", tool_use_ids=dangling))
    assert unanswered_tool_uses(events) == []
    events.append(UserEvent(seq=len(events), ts="t", text="resume"))
    assert validate_request(render(events).body()) is None
