"""render(): pure, valid for the API, and prefix-stable as the log grows."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import session_header
from scribe.context.render import (
    INTERRUPTED,
    RESUME_NOTE,
    current_model,
    prefix_blocks,
    render,
)
from scribe.fakeapi.validate import validate_request
from scribe.log.chunks import ChunkIndex, active_chunks
from scribe.log.codec import from_record, to_record
from scribe.log.events import (
    AssistantEvent,
    Event,
    FileChangeEvent,
    InterruptEvent,
    ModelSwitchEvent,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.open_calls import unanswered_tool_uses

TOOLS = [{"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}]


def session_event(**config: object) -> SessionEvent:
    return session_header(ts="t", id="s1", created="t", tools=TOOLS, config=dict(config))


class LogBuilder:
    """Builds well-formed event sequences the way the agent loop appends them."""

    def __init__(self, **config: object) -> None:
        self.events: list[Event] = [session_event(**config)]
        self.n = 0

    def add(self, cls: type[Event], **fields: object) -> Event:
        event = cls(seq=len(self.events), ts="t", **fields)  # type: ignore[arg-type]
        self.events.append(event)
        return event

    def user(self, text: str) -> None:
        self.add(UserEvent, text=text)

    def tool_turn(self, outputs: list[str], tool: str = "read_file") -> None:
        ids = []
        content: list[dict] = [{"type": "text", "text": "Let me look."}]
        for _ in outputs:
            self.n += 1
            ids.append(f"toolu_{self.n}")
            content.append({"type": "tool_use", "id": ids[-1], "name": tool, "input": {"path": "a"}})
        self.add(AssistantEvent, content=content, stop_reason="tool_use")
        self.add(UsageEvent, purpose="agent", model="m", input=1, cache_read=0, cache_write=0, output=1)
        for tool_use_id, output in zip(ids, outputs, strict=True):
            self.add(ToolResultEvent, tool_use_id=tool_use_id, tool=tool, output=output)

    def answer(self, text: str) -> None:
        self.add(AssistantEvent, content=[{"type": "text", "text": text}], stop_reason="end_turn")


def breakpoints(request) -> int:  # type: ignore[no-untyped-def]
    blocks = request.tools + request.system + [b for m in request.messages for b in m["content"]]
    return sum(1 for b in blocks if "cache_control" in b)


def test_first_request_shape() -> None:
    log = LogBuilder()
    log.user("hello")
    req = render(log.events)
    assert req.tools == TOOLS
    assert req.system == [{"type": "text", "text": "You are scribe.", "cache_control": {"type": "ephemeral"}}]
    assert req.messages == [{"role": "user", "content": [
        {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}]
    assert validate_request(req.body()) is None


def test_tool_results_come_first_and_breakpoints_sit_on_last_two_user_turns() -> None:
    log = LogBuilder()
    log.user("read it")
    log.tool_turn(["one", "two"])
    log.add(FileChangeEvent, path="b.py", kind="modified", stale=True)
    req = render(log.events)
    last = req.messages[-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "tool_result", "text"]
    assert "b.py was modified; it changed since you last read it" in last[2]["text"]
    assert "cache_control" in last[-1] and "cache_control" in req.messages[0]["content"][-1]
    assert breakpoints(req) == 3
    assert validate_request(req.body()) is None


def test_dangling_tool_use_is_closed_as_interrupted() -> None:
    log = LogBuilder()
    log.user("go")
    log.add(AssistantEvent, content=[{"type": "tool_use", "id": "toolu_x", "name": "read_file", "input": {}}],
            stop_reason="tool_use")
    log.user("are you there?")
    req = render(log.events)
    blocks = req.messages[-1]["content"]
    assert blocks[0] == {"type": "tool_result", "tool_use_id": "toolu_x", "content": INTERRUPTED, "is_error": True}
    assert blocks[1]["text"] == "are you there?"
    assert validate_request(req.body()) is None


def test_interrupt_event_and_orphan_results() -> None:
    log = LogBuilder()
    log.user("go")
    log.add(AssistantEvent, content=[{"type": "tool_use", "id": "a", "name": "read_file", "input": {}},
                                     {"type": "tool_use", "id": "b", "name": "read_file", "input": {}}],
            stop_reason="tool_use")
    log.add(ToolResultEvent, tool_use_id="a", tool="read_file", output="ok")
    log.add(ToolResultEvent, tool_use_id="zzz", tool="read_file", output="orphan")  # no such call
    log.add(InterruptEvent, tool_use_ids=["b"])
    req = render(log.events)
    blocks = req.messages[-2]["content"]
    assert [b["tool_use_id"] for b in blocks] == ["a", "b"]
    assert blocks[1]["content"] == INTERRUPTED
    assert req.messages[-1] == {"role": "assistant", "content": [{"type": "text", "text": (
        "[The person cancelled this request before it finished; what had run: read_file; not run: read_file. "
        "It stays cancelled unless the person asks for it again.]")}]}
    assert validate_request(req.body()) is None


def test_a_cancelled_request_is_closed_by_a_marker_and_the_next_message_stands_alone() -> None:
    log = LogBuilder()
    log.user("delete all the tests now")
    log.add(InterruptEvent, tool_use_ids=[], reason="cancelled by the user")
    log.user("actually, just list the tests")
    req = render(log.events)
    assert [m["role"] for m in req.messages] == ["user", "assistant", "user"]
    assert req.messages[0]["content"][0]["text"] == "delete all the tests now"
    assert req.messages[1]["content"] == [{"type": "text", "text": (
        "[The person cancelled this request before it finished; no tool had run. "
        "It stays cancelled unless the person asks for it again.]")}]
    assert req.messages[2]["content"][0]["text"] == "actually, just list the tests"
    assert breakpoints(req) == 3 and validate_request(req.body()) is None
    # the same bytes from the same log, and after a round trip through the log format
    again = [from_record(json.loads(json.dumps(to_record(e)))) for e in log.events]
    assert render(again) == req


def test_a_cancel_says_what_had_run_of_the_request_and_who_stopped_it() -> None:
    log = LogBuilder()
    log.user("old request")
    log.tool_turn(["done before"])  # an earlier call of the same request: it ran
    log.user("fix it")
    log.tool_turn(["a", "b"])
    log.add(AssistantEvent, content=[{"type": "tool_use", "id": "w", "name": "write_file", "input": {}}],
            stop_reason="tool_use")
    log.add(InterruptEvent, tool_use_ids=["w"], reason="stopped by SIGTERM")
    log.add(InterruptEvent, tool_use_ids=[], reason="cancelled by the user")  # nothing left to close
    log.user("next")
    req = render(log.events)
    markers = [m for m in req.messages if m["role"] == "assistant" and m["content"][0].get("text", "").startswith("[")]
    assert [m["content"][0]["text"] for m in markers] == [
        "[This request was stopped before it finished (stopped by SIGTERM); what had run: read_file ×2; "
        "not run: write_file. It stays cancelled unless the person asks for it again.]"]
    assert [m["role"] for m in req.messages][-3:] == ["user", "assistant", "user"]
    assert validate_request(req.body()) is None


def test_an_interrupt_after_the_answer_adds_no_marker() -> None:
    log = LogBuilder()
    log.user("hi")
    log.answer("hello")
    before = render(log.events)
    log.add(InterruptEvent, tool_use_ids=[], reason="cancelled by the user")
    assert render(log.events).messages == before.messages


def test_long_output_is_elided_with_recall_pointer() -> None:
    log = LogBuilder(render_output_chars=2000)
    log.user("run")
    big = "".join(f"line {i}\n" for i in range(5000))
    log.tool_turn([big])
    result_seq = log.events[-1].seq
    content = render(log.events).messages[-1]["content"][0]["content"]
    assert len(content) < 2200
    assert content.startswith("line 0\n") and content.rstrip().endswith("line 4999")
    assert f"recall(seq_from={result_seq}, seq_to={result_seq})" in content


def _results(req: object) -> dict[str, str]:
    return {b["tool_use_id"]: b["content"] for m in req.messages for b in m["content"]  # type: ignore[attr-defined]
            if b.get("type") == "tool_result"}


def test_outputs_of_turns_ended_before_the_latest_chunk_are_shown_short() -> None:
    big = "".join(f"row {i}\n" for i in range(2000))
    log = LogBuilder(render_output_chars=6000, settled_output_chars=500)
    log.user("one")
    log.tool_turn([big])  # toolu_1
    log.answer("done one")
    log.user("two")
    log.tool_turn([big])  # toolu_2
    log.answer("done two")
    log.user("three")
    before = _results(render(log.events))
    assert len(before["toolu_1"]) > 5000 and len(before["toolu_2"]) > 5000  # no chunk yet: nothing shortened

    log.add(ObservationEvent, text="🟡 turn one ran", seq_from=1, seq_to=6, tokens=5, model="h")
    log.tool_turn([big])  # toolu_3, in the current turn
    after = _results(render(log.events))
    assert "toolu_1" not in after  # observed
    assert len(after["toolu_2"]) < 700 and "recall(seq_from=" in after["toolu_2"]  # settled: short
    assert len(after["toolu_3"]) > 5000  # the current turn is shown as before

    # A session recorded before the setting existed renders as it always did.
    old = [session_event(render_output_chars=6000), *log.events[1:]]
    assert len(_results(render(old))["toolu_2"]) > 5000


def test_a_model_switch_applies_from_the_next_request() -> None:
    log = LogBuilder(model="claude-sonnet-test")
    log.user("one")
    log.answer("ok")
    index = ChunkIndex()
    assert render(log.events, index).model == "claude-sonnet-test"
    log.add(ModelSwitchEvent, model="claude-opus-test")
    log.user("two")
    assert render(log.events, index).model == render(log.events).model == "claude-opus-test"
    assert current_model(log.events) == "claude-opus-test"


def test_observations_replace_raw_events_and_reflection_takes_their_place() -> None:
    log = LogBuilder()
    log.user("first")
    log.answer("ok")
    log.user("second")
    log.answer("ok2")
    obs1 = log.add(ObservationEvent, text="🔴 user said first", seq_from=1, seq_to=2, tokens=5, model="h")
    log.user("third")
    req = render(log.events)
    assert [b["text"] for b in req.system[1:]] == [
        '<observations events="1-2">\n🔴 user said first\n</observations>']
    assert req.messages[0]["content"][0]["text"] == "second"
    obs2 = log.add(ObservationEvent, text="🟡 second", seq_from=3, seq_to=4, tokens=5, model="h")
    obs3 = log.add(ObservationEvent, text="🟡 third", seq_from=6, seq_to=6, tokens=5, model="h")
    log.add(ReflectionEvent, text="🔴 first and second", supersedes=[obs1.seq, obs2.seq], tokens=5, model="h")
    req = render(log.events)
    texts = [b["text"] for b in req.system[1:]]
    assert len(texts) == 2 and "first and second" in texts[0] and "third" in texts[1]
    assert obs3.seq_to == 6
    assert req.messages == [{"role": "user", "content": [
        {"type": "text", "text": RESUME_NOTE, "cache_control": {"type": "ephemeral"}}]}]
    assert breakpoints(req) == 3


def test_raw_tail_starting_with_assistant_gets_the_fixed_user_note() -> None:
    log = LogBuilder()
    log.user("a")
    log.answer("b")
    log.user("c")
    log.answer("d")
    log.add(ObservationEvent, text="x", seq_from=1, seq_to=1, tokens=1, model="h")
    req = render(log.events)
    assert req.messages[0]["content"][0]["text"] == RESUME_NOTE
    assert req.messages[1]["role"] == "assistant"
    assert validate_request(req.body()) is None


def test_records_round_trip_and_keep_unknown_fields_and_types() -> None:
    record = {"v": 1, "seq": 3, "ts": "t", "type": "user", "text": "hi", "mood": "curious"}
    event = from_record(record)
    assert isinstance(event, UserEvent) and event.extra == {"mood": "curious"}
    assert to_record(event) == record
    odd = {"v": 1, "seq": 4, "ts": "t", "type": "telepathy", "signal": [1, 2]}
    assert to_record(from_record(odd)) == odd


# --- the property: render(L) is a prefix of render(L + E) -----------------------------------

# Each kind of output a preview treats its own way: a command's keeps both ends, a page's its
# head; a file read and a recall answer are shown whole until their turn settles.
TOOL_NAMES = ["run_command", "read_file", "web_fetch", "mcp__notes__find", "recall"]
actions = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.text(min_size=1, max_size=30).filter(str.strip)),
        st.tuples(st.just("tools"), st.tuples(st.sampled_from(TOOL_NAMES),
                                              st.lists(st.text(max_size=400), min_size=1, max_size=3))),
        st.tuples(st.just("answer"), st.text(min_size=1, max_size=30)),
        st.tuples(st.just("change"), st.sampled_from(["a.py", "b/c.txt"])),
        st.tuples(st.just("usage"), st.none()),
        st.tuples(st.just("cancel"), st.tuples(st.integers(0, 2), st.integers(0, 2))),
    ),
    min_size=1,
    max_size=25,
)


# Settled outputs shorter than the rest, so a chunk changes what render shows of them: a session
# with previews, and one recorded before them.
CONFIGS = [{"preview_chars": 150, "settled_output_chars": 60}, {"render_output_chars": 120, "settled_output_chars": 5}]
configs = st.sampled_from(CONFIGS)


def build(steps: list, config: dict[str, int] = CONFIGS[0]) -> LogBuilder:  # type: ignore[type-arg]
    log = LogBuilder(**config)
    log.user("start")
    return grow(log, steps)


def grow(log: LogBuilder, steps: list) -> LogBuilder:  # type: ignore[type-arg]
    for kind, arg in steps:
        if kind == "user":
            log.user(arg)
        elif kind == "tools":
            log.tool_turn(arg[1], arg[0])
        elif kind == "answer":
            log.answer(arg)
        elif kind == "change":
            log.add(FileChangeEvent, path=arg, kind="modified")
        elif kind == "cancel":  # `ran` calls had their results, the rest never ran
            ran, not_run = arg
            log.tool_turn(["out"] * ran) if ran else None
            ids = [f"cancelled_{len(log.events)}_{i}" for i in range(not_run)]
            if ids:
                log.add(AssistantEvent, content=[{"type": "tool_use", "id": i, "name": "read_file", "input": {}}
                                                 for i in ids], stop_reason="tool_use")
            log.add(InterruptEvent, tool_use_ids=ids, reason="cancelled by the user")
        else:
            log.add(UsageEvent, purpose="agent", model="m", input=1, cache_read=0, cache_write=0, output=1)
    return log


@settings(max_examples=300, deadline=None)
@given(actions, st.integers(min_value=0, max_value=25), configs)
def test_render_is_a_prefix_of_render_after_appending(steps: list, cut: int, config: dict[str, int]) -> None:  # type: ignore[type-arg]
    full = build(steps, config).events
    # Calls happen once the first user message exists: cut at or after it.
    cut = max(1, min(cut, len(full) - 1))
    before = full[: cut + 1]
    # A request is only ever made between whole tool batches: cut after a complete one.
    while unanswered_tool_uses(before):
        before = full[: len(before) + 1]
    for prefix in (before, [from_record(json.loads(json.dumps(to_record(e)))) for e in before]):
        old, new = prefix_blocks(render(prefix)), prefix_blocks(render(full))
        assert new[: len(old)] == old
    # At a call point the log ends with the user's side of the turn.
    req = render([*full, UserEvent(seq=len(full), ts="t", text="next")])
    assert validate_request(req.body()) is None
    assert breakpoints(req) <= 4


@settings(max_examples=150, deadline=None)
@given(actions, st.lists(st.integers(min_value=0, max_value=3), max_size=12), configs)
def test_incremental_chunk_index_matches_a_fresh_scan(steps: list, compressions: list[int],  # type: ignore[type-arg]
                                                      config: dict[str, int]) -> None:
    """Observations and reflections appended at any point: the index kept across calls always
    agrees with a fresh scan, and render with it equals render without."""
    log = build(steps, config)
    observed_to = 0
    chunk_seqs: list[int] = []
    for kind in compressions:
        last = log.events[-1].seq
        if kind < 3 and observed_to < last:
            chunk = log.add(ObservationEvent, text=f"🔴 up to {last}", seq_from=observed_to + 1, seq_to=last,
                            tokens=3, model="h")
            chunk_seqs.append(chunk.seq)
            observed_to = last
        elif len(chunk_seqs) >= 2:
            gone = chunk_seqs[:2]
            chunk = log.add(ReflectionEvent, text="🔴 condensed", supersedes=gone, tokens=2, model="h")
            chunk_seqs = [chunk.seq] + chunk_seqs[2:]
        log.user("go on")
    index = ChunkIndex()
    for n in range(1, len(log.events) + 1):
        prefix = log.events[:n]
        assert index.update(prefix) == active_chunks(prefix)
        assert render(prefix, index) == render(prefix)
    chunks, _ = active_chunks(log.events)
    assert [c.seq for c in chunks] == chunk_seqs


@settings(max_examples=150, deadline=None)
@given(actions, st.integers(min_value=0, max_value=25), actions, configs)
def test_after_a_chunk_the_request_stays_a_prefix_as_raw_events_are_appended(
        before_chunk: list, cut: int, after_chunk: list, config: dict[str, int]) -> None:  # type: ignore[type-arg]
    log = build(before_chunk, config)  # tool turns come with their results: no call is left open
    # As the agent makes one: at a turn start, after the user's message, covering older events.
    log.user("next")
    log.add(ObservationEvent, text="🔴 observed", seq_from=1, seq_to=max(1, len(log.events) // 3), tokens=3,
            model="h")
    chunk_at = len(log.events)
    grow(log, after_chunk)
    full = log.events
    prefix = full[: min(len(full), chunk_at + cut)]
    while unanswered_tool_uses(prefix):
        prefix = full[: len(prefix) + 1]
    old, new = prefix_blocks(render(prefix)), prefix_blocks(render(full))
    assert new[: len(old)] == old
