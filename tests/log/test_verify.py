"""log/verify.py and memory/schema.json: what a whole, well-formed log is, checked line by line."""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from builders import session_header
from scribe.log.codec import to_record
from scribe.log.events import (
    EVENT_CLASSES,
    AssistantEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    InterruptEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import encode
from scribe.log.schema_check import EventChecker, event_checker, event_schema, thresholds
from scribe.log.verify import verify_bytes

TOOLS = [{"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def session_event() -> SessionEvent:
    return session_header(id="s1", model="claude-sonnet-5-5", scribe_version="0.1.0", tools=TOOLS,
                          config={"model": "claude-sonnet-5-5"}, git_head=None)


def every_type() -> list[Event]:
    """One event of every type, in the order a session appends them (tool calls answered)."""
    ts = "2026-01-01T00:00:01.000Z"
    use = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}
    events: list[Event] = [
        session_event(),
        UserEvent(seq=1, ts=ts, text="read a.py"),
        AssistantEvent(seq=2, ts=ts, content=[{"type": "text", "text": "Reading."}, use], stop_reason="tool_use",
                       message_id="msg_1", model="claude-sonnet-5-5"),
        UsageEvent(seq=3, ts=ts, purpose="agent", model="claude-sonnet-5-5", input=10, cache_read=0,
                   cache_write=1500, output=20, latency_ms=40, message_id="msg_1"),
        ToolResultEvent(seq=4, ts=ts, tool_use_id="toolu_1", tool="read_file", output="1\tx = 1\n", exit_code=None),
        FileChangeEvent(seq=5, ts=ts, path="a.py", kind="modified", hash="abc", stale=True),
        AssistantEvent(seq=6, ts=ts, content=[{**use, "id": "toolu_2"}], stop_reason="tool_use"),
        InterruptEvent(seq=7, ts=ts, tool_use_ids=["toolu_2"], reason="cancelled by the user"),
        ErrorEvent(seq=8, ts=ts, kind="api", message="model call failed: HTTP 529"),
        ObservationEvent(seq=9, ts=ts, text="- read a.py", seq_from=1, seq_to=8, tokens=5, model="claude-haiku-5-5"),
        ReflectionEvent(seq=10, ts=ts, text="- a.py read", supersedes=[9], tokens=4, model="claude-haiku-5-5"),
    ]
    return events


def log_bytes(records: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for r in records)


def records() -> list[dict[str, Any]]:
    return [to_record(e) for e in every_type()]


def messages(data: bytes) -> list[str]:
    return [str(f) for f in verify_bytes(data).findings]


def test_a_well_formed_log_of_every_type_verifies() -> None:
    data = b"".join(encode(e) for e in every_type())
    verdict = verify_bytes(data)
    assert verdict.ok and verdict.findings == [] and verdict.lines == verdict.events == 11


def test_the_schema_describes_every_event_type_with_its_required_fields_and_types() -> None:
    schema = event_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for name, cls in EVENT_CLASSES.items():
        definition = schema["$defs"][name]
        fields = [f for f in dataclasses.fields(cls) if f.name not in ("seq", "ts", "extra")]
        required = {f.name for f in fields if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING}
        assert set(definition["required"]) == required, name
        # every field is described (and a few written as extras, like error.torn)
        assert set(definition["properties"]) >= {f.name for f in fields}, name
        assert definition.get("additionalProperties", True) is not False
    # the root schema (if/then per type) and verify's per-type validators agree
    root = Draft202012Validator(schema)
    for record in records():
        assert root.is_valid(record), record["type"]
        broken = {**record, "seq": "zero"}
        assert not root.is_valid(broken) and event_checker().problems(broken)
    bad_usage = {**records()[3], "input": "10"}
    assert not root.is_valid(bad_usage)
    assert event_checker().problems(bad_usage) == ["input: '10' is not of type 'integer'"]


def test_unknown_types_and_fields_are_allowed() -> None:
    recs = records()
    recs[1]["mood"] = "curious"
    recs.insert(2, {"v": 1, "seq": 2, "ts": "t", "type": "plan", "steps": ["a"]})
    for i, r in enumerate(recs):
        r["seq"] = i
    verdict = verify_bytes(log_bytes(recs))
    assert verdict.ok and verdict.findings == []


def test_a_corrupted_middle_line_fails_naming_it_and_only_it() -> None:
    lines = log_bytes(records()).split(b"\n")
    lines[4] = lines[4][:20] + b"#" + lines[4][21:]
    assert messages(b"\n".join(lines)) == ["line 5: not valid JSON"]


def test_a_missing_tool_result_fails_naming_the_call() -> None:
    recs = [r for r in records() if r["type"] != "tool_result"]
    recs.insert(4, {"v": 1, "seq": 0, "ts": "t", "type": "user", "text": "and?"})
    for i, r in enumerate(recs):
        r["seq"] = i
    found = messages(log_bytes(recs))
    assert found == ["line 3: tool_use toolu_1 (read_file) has no tool_result or interrupt before the user event "
                     "on line 5"]
    assert not verify_bytes(log_bytes(recs)).ok


def test_seq_gaps_repeats_and_a_late_start_fail() -> None:
    recs = records()
    recs[6]["seq"] = 7  # 5 then 7: a gap; then 7 again: a repeat
    assert messages(log_bytes(recs)) == ["line 7: seq 7 follows 5 (gap)", "line 8: seq 7 follows 7 (repeat)"]
    recs = records()
    for r in recs:
        r["seq"] += 1
    assert messages(log_bytes(recs)) == ["line 1: seq 1 on the first readable line; a log starts at seq 0"]


def test_a_line_from_a_newer_scribe_fails() -> None:
    recs = records()
    recs[5]["v"] = 2
    assert messages(log_bytes(recs)) == ["line 6: written by a newer scribe (log format v2; this scribe reads v1)"]


def test_schema_violations_name_the_line_and_the_field() -> None:
    recs = records()
    recs[3]["cache_read"] = -1
    del recs[4]["output"]
    assert messages(log_bytes(recs)) == [
        "line 4: usage event: cache_read: -1 is less than the minimum of 0",
        "line 5: tool_result event: 'output' is a required property",
    ]


def test_the_first_line_must_be_the_only_session_event() -> None:
    recs = records()
    recs[0], recs[1] = recs[1], recs[0]
    recs[0]["seq"], recs[1]["seq"] = 0, 1
    assert messages(log_bytes(recs)) == ["line 1: the first line is a user event, not a session event",
                                         "line 2: a second session event (only the first line may be one)"]


def test_a_torn_last_line_and_an_open_call_at_the_end_are_warnings() -> None:
    recs = records()[:3]  # ends on an assistant event whose tool call is open
    data = log_bytes(recs) + b'{"v":1,"seq":3,"ts":"2026-01-01T00:00:01.0'
    verdict = verify_bytes(data)
    assert verdict.ok
    assert [str(f) for f in verdict.findings] == [
        "warning: line 3: tool_use toolu_1 (read_file) is still open at the end of the log (the session stopped "
        "mid-call; `scribe run -c` closes it with an interrupt)",
        "warning: line 4: torn last line (42 bytes, no newline): a writer stopped mid-line; `scribe run -c` cuts it "
        "off and keeps its bytes in an error event",
    ]


def test_ten_thousand_lines_of_a_long_session_verify_with_warnings_only() -> None:
    """How fast is benchmarks/scale.py's to measure (`log verify` of a 1 GB log), not a test's."""
    recs = records()
    big = [recs[0]]
    while len(big) < 10_000:
        for r in recs[1:]:
            r = copy.deepcopy(r)
            if r["type"] == "tool_result":
                r["output"] = f"line {len(big)}\n" * (len(big) % 7)
            big.append(r)
    big = big[:10_000]
    for i, r in enumerate(big):
        r["seq"] = i
    verdict = verify_bytes(log_bytes(big))
    assert verdict.lines == 10_000 and all(f.severity == "warning" for f in verdict.findings)


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                      st.sampled_from(["", "x", "text", "tool_use", "user", "usage"]))


@functools.cache
def uncached() -> tuple[EventChecker, Draft202012Validator]:
    """A checker that never remembers shapes, and the whole root schema as one validator."""
    checker = EventChecker(event_schema())
    checker.thresholds = None
    return checker, Draft202012Validator(event_schema())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 10), key=st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12) | st.sampled_from(
    ["v", "seq", "ts", "type", "text", "content", "input", "tool_use_ids", "supersedes", "seq_from", "tokens", "kind"]),
    value=json_leaf | st.lists(json_leaf, max_size=3) | st.dictionaries(st.sampled_from(["type", "id", "text", "name", "input"]), json_leaf, max_size=3),
    drop=st.booleans())
def test_remembered_shapes_never_change_a_verdict(index: int, key: str, value: Any, drop: bool) -> None:
    """The shape cache is exact: its answer equals jsonschema's on the line itself."""
    checker = event_checker()
    plain, root = uncached()
    record = records()[index]
    mutated = dict(record)
    if drop:
        mutated.pop(key, None)
    else:
        mutated[key] = value
    for r in (record, mutated):
        found = checker.problems(r)
        assert found == plain.problems(r)
        assert (found == []) == root.is_valid(r)


def test_a_schema_keyword_shapes_cannot_answer_turns_the_shortcut_off() -> None:
    assert thresholds(event_schema()) is not None
    schema = copy.deepcopy(event_schema())
    schema["$defs"]["user"]["properties"]["text"]["pattern"] = "^a"
    assert thresholds(schema) is None
    checker = EventChecker(schema)
    user = records()[1]
    assert checker.problems(user) != [] and checker.problems({**user, "text": "all"}) == []


def test_malformed_fields_are_reported_not_raised() -> None:
    recs = records()
    recs[4]["tool_use_id"] = ["toolu_1"]
    recs[7]["tool_use_ids"] = "toolu_2"
    recs[2]["content"] = "Reading."
    found = messages(log_bytes(recs))
    assert "line 3: assistant event: content: 'Reading.' is not of type 'array'" in found
    assert "line 5: tool_result event: tool_use_id: ['toolu_1'] is not of type 'string'" in found
    assert any(f.startswith("line 8: interrupt event: tool_use_ids:") for f in found)
