"""The fake Messages API, exercised through the real `anthropic` SDK over loopback HTTP.

What the SDK does with broken connections, in the terms of its public API (never the HTTP
library's errors that it chains as causes, which change between its releases):

* Fault(kind="drop") (no response at all): `anthropic.APIConnectionError`, retried like any
  connection error after the SDK's own short backoff.
* Fault(kind="cut") on a stream: the 200 response has already been handed over, so the
  failure surfaces while iterating, as `anthropic.APIConnectionError` (not a timeout), and is
  NOT retried, whatever max_retries says: the text before the cut has been read.
* Fault(kind="hang") and Fault(kind="stall"): `anthropic.APITimeoutError`, before the response
  or mid-stream.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scribe.fakeapi import (
    EXHAUSTED_TEXT,
    FAULT_KINDS,
    MALFORMED_SSE,
    STREAM_CONTENT_TYPE,
    FakeMessagesServer,
    Fault,
    PromptCache,
    Reply,
    count_tokens,
    text_block,
    tool_use_block,
)
from scribe.fakeapi.__main__ import echo
from scribe.fakeapi.server import NO_RESPONSE

MODEL = "claude-test-model"
CC = {"type": "ephemeral"}
# ~1700 tokens: comfortably above the 1024-token minimum, so it can be cached on its own.
SYSTEM_TEXT = "You are scribe, a careful coding agent. " * 170


@contextmanager
def serve(script: Any = None, **kwargs: Any) -> Iterator[FakeMessagesServer]:
    with FakeMessagesServer(script, **kwargs) as server:
        yield server
        assert server.errors == []


def client_for(server: FakeMessagesServer, retries: int = 2) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=retries)


def user(text: str, cache: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = CC
    return {"role": "user", "content": [block]}


def system(text: str = SYSTEM_TEXT, cache: bool = True) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "text", "text": text}
    if cache:
        block["cache_control"] = CC
    return [block]


def tokens_of(block: dict[str, Any]) -> int:
    """Spec'd block size, computed independently of the server's code."""
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    return count_tokens(json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":")))


def total_tokens(request: dict[str, Any]) -> int:
    blocks = list(request.get("tools", []))
    sys_ = request.get("system", [])
    blocks += [{"type": "text", "text": sys_}] if isinstance(sys_, str) else sys_
    for message in request["messages"]:
        content = message["content"]
        blocks += [{"type": "text", "text": content}] if isinstance(content, str) else content
    return sum(tokens_of(b) for b in blocks)


def ask(client: anthropic.Anthropic, **request: Any) -> dict[str, Any]:
    """Send one non-streamed request and return its usage, checking the invariant on the way."""
    request.setdefault("model", MODEL)
    request.setdefault("max_tokens", 64)
    usage = client.messages.create(**request).usage
    parts = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
    assert parts == total_tokens(request)
    return usage.model_dump()


# -- tokens --------------------------------------------------------------------


def test_count_tokens_is_ceil_of_utf8_bytes_over_four() -> None:
    assert count_tokens("") == 0
    assert count_tokens("a") == 1
    assert count_tokens("abcd") == 1
    assert count_tokens("abcde") == 2
    assert count_tokens("é" * 4) == 2  # 8 UTF-8 bytes


# -- replies -------------------------------------------------------------------


def test_streamed_text_and_tool_use_accumulate_into_final_message() -> None:
    text = "I will read the file first, then summarise it for you."
    tool_input = {"path": "src/é.py", "lines": [1, 20], "opts": {"follow": True}}
    with serve(
        [Reply([text_block(text), tool_use_block("read_file", tool_input, id="toolu_abc")])]
    ) as server:
        client = client_for(server)
        with client.messages.stream(model=MODEL, max_tokens=100, messages=[user("hi")]) as stream:
            streamed = "".join(stream.text_stream)
            final = stream.get_final_message()
            request_id = stream.request_id

    assert streamed == text
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[0].text == text
    assert (final.content[1].id, final.content[1].name) == ("toolu_abc", "read_file")
    assert final.content[1].input == tool_input
    assert final.stop_reason == "tool_use"
    assert final.model == MODEL
    assert final.id.startswith("msg_")
    recorded = server.requests[0]
    assert recorded.json["stream"] is True and recorded.status == 200
    assert request_id is not None and request_id.startswith("req_")
    # Usage from message_start (input side) and message_delta (output side) both survive.
    assert final.usage.model_dump(include=set(recorded.usage)) == recorded.usage
    assert final.usage.output_tokens == count_tokens(
        text + json.dumps(tool_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    )


def test_non_streamed_reply_and_generated_tool_ids() -> None:
    first, second = tool_use_block("ls", {}), tool_use_block("ls", {})
    assert first["id"].startswith("toolu_01") and first["id"] != second["id"]
    with serve([Reply([text_block("plain answer")]), Reply([first])]) as server:
        client = client_for(server)
        message = client.messages.create(model=MODEL, max_tokens=50, messages=[user("hi")])
        tool = client.messages.create(model=MODEL, max_tokens=50, messages=[user("again")])
        exhausted = client.messages.create(model=MODEL, max_tokens=50, messages=[user("more")])
    assert message.content[0].text == "plain answer"
    assert message.stop_reason == "end_turn" and message.role == "assistant" and message.model == MODEL
    assert message.usage.output_tokens == count_tokens("plain answer")
    assert (
        tool.content[0].id == first["id"] and tool.content[0].input == {} and tool.stop_reason == "tool_use"
    )
    assert exhausted.content[0].text == EXHAUSTED_TEXT and exhausted.stop_reason == "end_turn"
    assert [r.json["messages"][0]["content"][0]["text"] for r in server.requests] == ["hi", "again", "more"]


def test_responder_sees_the_request_and_echo_default() -> None:
    with serve(lambda request: Reply.text(f"{len(request['messages'])} messages")) as server:
        message = client_for(server).messages.create(
            model=MODEL, max_tokens=10, messages=[user("a"), {"role": "assistant", "content": "b"}, user("c")]
        )
    assert message.content[0].text == "3 messages"
    assert echo({"messages": [{"role": "user", "content": "ping"}]}).blocks[0]["text"] == "echo: ping"


# -- validation ----------------------------------------------------------------

TOOL_USE = {"role": "assistant", "content": [tool_use_block("read_file", {"path": "a.py"}, id="toolu_x")]}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_x", "content": "print(1)"}


@pytest.mark.parametrize(
    ("request_overrides", "fragment"),
    [
        pytest.param(
            {"messages": [user("read a.py"), TOOL_USE, user("thanks")]},
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_x",
            id="missing-tool-result",
        ),
        pytest.param(
            {
                "messages": [
                    user("go"),
                    TOOL_USE,
                    {"role": "user", "content": [{"type": "text", "text": "x"}, RESULT]},
                ]
            },
            "`tool_result` blocks must come first",
            id="tool-result-not-first",
        ),
        pytest.param(
            {"messages": [user("go"), TOOL_USE, user("note"), {"role": "user", "content": [RESULT]}]},
            "`tool_result` blocks must come first",
            id="tool-result-after-merged-text",
        ),
        pytest.param(
            {"messages": [user("go"), {"role": "user", "content": [RESULT]}]},
            "unexpected `tool_use_id` found in `tool_result` blocks: toolu_x",
            id="orphan-tool-result",
        ),
        pytest.param(
            {
                "system": system(),
                "messages": [user("a", True), user("b", True), user("c", True), user("d", True)],
            },
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
            id="five-cache-controls",
        ),
        pytest.param(
            {"messages": [{"role": "assistant", "content": "hello"}, user("hi")]},
            'first message must use the "user" role',
            id="first-not-user",
        ),
        pytest.param({"messages": [user("")]}, "text content blocks must be non-empty", id="empty-text"),
        pytest.param(
            {"messages": [user("x")], "tools": [{"name": "read_file", "description": "no schema"}]},
            "tools.0.input_schema: Field required",
            id="tool-without-schema",
        ),
        pytest.param(
            {"messages": [user("go"), {"role": "assistant", "content": [TOOL_USE["content"][0]] * 2}]},
            "`tool_use` ids must be unique",
            id="duplicate-tool-use-id",
        ),
        pytest.param({"messages": []}, "at least one message is required", id="no-messages"),
        pytest.param(
            {"messages": [{"role": "system", "content": "be brief"}, user("hi")]},
            'first message must use the "user" role',
            id="system-message-first",
        ),
        pytest.param(
            {"messages": [user("go"), {"role": "assistant", "content": "ok"}, {"role": "system", "content": "be brief"}]},
            "messages.2: role 'system' must follow a 'user' message",
            id="system-message-after-assistant",
        ),
        pytest.param(
            {"messages": [user("go"), {"role": "system", "content": "be brief"}, user("and then?")]},
            "messages.1: role 'system' must precede an 'assistant' message or end the array",
            id="system-message-before-user",
        ),
        pytest.param(
            {"messages": [user("go"), {"role": "system", "content": [RESULT]}]},
            "messages.1.content.0.type: Input should be 'text'",
            id="system-message-not-text",
        ),
        pytest.param(
            {"messages": [user("go"), {"role": "developer", "content": "be brief"}]},
            "messages.1.role: Input should be 'user', 'assistant' or 'system'",
            id="unknown-role",
        ),
        pytest.param(
            {"messages": [user("x")], "extra_body": {"max_tokenz": 5}},
            "max_tokenz: Extra inputs",
            id="unknown-field",
        ),
    ],
)
def test_invalid_requests_are_rejected_like_the_real_api(
    request_overrides: dict[str, Any], fragment: str
) -> None:
    with serve([Reply.text("never sent")]) as server:
        request = {"model": MODEL, "max_tokens": 10, **request_overrides}
        with pytest.raises(anthropic.BadRequestError) as caught:
            client_for(server).messages.create(**request)
        assert caught.value.status_code == 400
        assert caught.value.body["error"]["type"] == "invalid_request_error"
        assert fragment in caught.value.body["error"]["message"]
        assert server.requests[-1].status == 400 and fragment in server.requests[-1].error
        assert len(server.requests) == 1  # a 400 is not retried
        assert server.remaining == 1  # a rejected request spends no scripted reply


def test_valid_tool_round_trip_with_merged_user_turn_is_accepted() -> None:
    messages = [user("go"), TOOL_USE, {"role": "user", "content": [RESULT]}, user("and then?")]
    with serve([Reply.text("done")]) as server:
        message = client_for(server).messages.create(model=MODEL, max_tokens=10, messages=messages)
    assert message.content[0].text == "done"
    assert server.requests[0].error is None


def test_a_system_message_in_the_conversation_is_accepted_and_billed_where_it_stands() -> None:
    """Claude Code sends its context as a message of role "system" right after the person's first
    message; the API takes it as part of the conversation, so its cache breakpoint counts and the
    prefix it closes is cached."""
    note = {"role": "system", "content": [{"type": "text", "text": SYSTEM_TEXT, "cache_control": CC}]}
    first = [user("go"), note]
    later = [user("go"), note, TOOL_USE, {"role": "user", "content": [RESULT]}]
    with serve() as server:
        client = client_for(server)
        written = ask(client, messages=first)
        read = ask(client, messages=later)
    prefix = tokens_of(user("go")["content"][0]) + tokens_of(note["content"][0])
    assert written["cache_creation_input_tokens"] == prefix
    assert read["cache_read_input_tokens"] == prefix
    assert [r.status for r in server.requests] == [200, 200]


# -- prompt cache ----------------------------------------------------------------


def test_first_call_writes_and_identical_call_reads_the_prefix() -> None:
    with serve() as server:
        client = client_for(server)
        request = {"system": system(), "messages": [user("hello")]}
        first, second = ask(client, **request), ask(client, **request)
    system_tokens = tokens_of(system()[0])
    user_tokens = tokens_of(user("hello")["content"][0])
    assert first["cache_creation_input_tokens"] == system_tokens and first["cache_read_input_tokens"] == 0
    assert first["cache_creation"]["ephemeral_5m_input_tokens"] == system_tokens
    assert second["cache_read_input_tokens"] == system_tokens and second["cache_creation_input_tokens"] == 0
    assert first["input_tokens"] == second["input_tokens"] == user_tokens
    assert server.requests[1].usage["cache_read_input_tokens"] == system_tokens
    assert server.cache_stats() == {"entries": 1, "reads": 1, "writes": 1}


def test_appended_turns_read_the_old_prefix_and_write_the_new_part() -> None:
    turn1 = [user("first question", cache=True)]
    answer, question = {"role": "assistant", "content": "first answer"}, user("second question", cache=True)
    with serve() as server:
        client = client_for(server)
        first = ask(client, system=system(), messages=turn1)
        # The breakpoint moves to the newest block, as an agent loop does each turn.
        second = ask(client, system=system(), messages=[user("first question"), answer, question])
    old_prefix = tokens_of(system()[0]) + tokens_of(turn1[0]["content"][0])
    new_part = tokens_of({"type": "text", "text": "first answer"}) + tokens_of(question["content"][0])
    assert first["cache_creation_input_tokens"] == old_prefix
    assert second["cache_read_input_tokens"] == old_prefix
    assert second["cache_creation_input_tokens"] == new_part
    assert second["input_tokens"] == 0


def test_prefix_below_minimum_is_never_cached() -> None:
    with serve() as server:
        client = client_for(server)
        request = {"system": system("short system prompt"), "messages": [user("hi", cache=True)]}
        first, second = ask(client, **request), ask(client, **request)
    for usage in (first, second):
        assert usage["cache_creation_input_tokens"] == usage["cache_read_input_tokens"] == 0
    assert server.cache_stats()["entries"] == 0


def test_entries_expire_after_ttl_and_reads_refresh_them() -> None:
    now = [1000.0]
    with serve(clock=lambda: now[0]) as server:
        client = client_for(server)
        request = {"system": system(), "messages": [user("hi")]}
        ask(client, **request)
        now[0] += 200
        assert ask(client, **request)["cache_read_input_tokens"] > 0
        server.advance(200)  # 400 s after the write, but only 200 s after the read
        assert ask(client, **request)["cache_read_input_tokens"] > 0
        server.advance(301)
        expired = ask(client, **request)
    assert expired["cache_read_input_tokens"] == 0
    assert expired["cache_creation_input_tokens"] == tokens_of(system()[0])


def test_one_hour_breakpoint_outlives_five_minutes() -> None:
    long_lived = [{"type": "text", "text": SYSTEM_TEXT, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    with serve() as server:
        client = client_for(server)
        first = ask(client, system=long_lived, messages=[user("hi")])
        server.advance(301)
        later = ask(client, system=long_lived, messages=[user("hi")])
    assert first["cache_creation"] == {
        "ephemeral_5m_input_tokens": 0,
        "ephemeral_1h_input_tokens": tokens_of(long_lived[0]),
    }
    assert later["cache_read_input_tokens"] == tokens_of(long_lived[0])


def _many_blocks(breakpoint_at: int, count: int = 40) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": f"observation {i}"} for i in range(count)]
    blocks[breakpoint_at] = {**blocks[breakpoint_at], "cache_control": CC}
    return [{"role": "user", "content": blocks}]


def test_moved_breakpoint_hits_within_twenty_block_lookback_only() -> None:
    with serve() as server:
        client = client_for(server)
        ask(client, system=system(cache=False), messages=_many_blocks(5))
        near = ask(client, system=system(cache=False), messages=_many_blocks(24))  # 19 blocks later
        server.advance(10_000)  # forget everything
        ask(client, system=system(cache=False), messages=_many_blocks(5))
        far = ask(client, system=system(cache=False), messages=_many_blocks(25))  # 20 blocks later
    prefix = tokens_of(system()[0]) + sum(
        tokens_of({"type": "text", "text": f"observation {i}"}) for i in range(6)
    )
    assert near["cache_read_input_tokens"] == prefix
    assert near["cache_creation_input_tokens"] > 0  # blocks 6..24 are written
    assert far["cache_read_input_tokens"] == 0


def test_change_in_an_early_block_misses() -> None:
    with serve() as server:
        client = client_for(server)
        messages = [user("hi", cache=True)]
        ask(client, system=system(), messages=messages)
        changed = ask(client, system=system(SYSTEM_TEXT + "!"), messages=messages)
        other_model = ask(client, model="other-model", system=system(), messages=messages)
    assert changed["cache_read_input_tokens"] == 0 and changed["cache_creation_input_tokens"] > 0
    assert other_model["cache_read_input_tokens"] == 0


def test_cache_pre_warming_with_zero_max_tokens_spends_no_script_item() -> None:
    with serve([Reply.text("real answer")]) as server:
        client = client_for(server)
        warm = client.messages.create(model=MODEL, max_tokens=0, system=system(), messages=[user("hi")])
        real = ask(client, system=system(), messages=[user("hi")])
    assert warm.content == [] and warm.stop_reason == "max_tokens" and warm.usage.output_tokens == 0
    assert warm.usage.cache_creation_input_tokens > 0
    assert real["cache_read_input_tokens"] == warm.usage.cache_creation_input_tokens
    assert server.requests[1].reply.blocks[0]["text"] == "real answer"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30),
            st.sets(st.integers(min_value=0, max_value=29), max_size=4),
            st.floats(min_value=0, max_value=400),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_usage_parts_always_sum_to_total(calls: list[tuple[list[int], set[int], float]]) -> None:
    cache, now = PromptCache(min_tokens=200), 0.0
    for sizes, marks, wait in calls:
        now += wait
        blocks = [
            {
                "type": "text",
                "text": "x" * (4 * size - 30) + f"{i:04d}",
                **({"cache_control": CC} if i in marks else {}),
            }
            for i, size in enumerate(sizes)
        ]
        request = {"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": blocks}]}
        usage = cache.account(request, now)
        assert min(usage.input_tokens, usage.cache_read_input_tokens, usage.cache_creation_input_tokens) >= 0
        parts = usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens
        assert parts == usage.total_tokens == total_tokens(request)


# -- faults --------------------------------------------------------------------


def test_overloaded_then_reply_succeeds_through_sdk_retry() -> None:
    with serve([Fault(status=529, message="Overloaded"), Reply.text("recovered")]) as server:
        message = client_for(server).messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
    assert message.content[0].text == "recovered"
    assert [r.status for r in server.requests] == [529, 200]
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1"]


def test_rate_limit_error_shape_without_retries() -> None:
    with (
        serve([Fault(status=429, message="slow down")]) as server,
        pytest.raises(anthropic.RateLimitError) as caught,
    ):
        client_for(server, retries=0).messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
    assert caught.value.body["error"] == {"type": "rate_limit_error", "message": "slow down"}
    assert caught.value.response.headers["retry-after"] == "0"


def test_dropped_connection_is_retried_by_the_sdk() -> None:
    with serve([Fault(kind="drop"), Reply.text("second try")]) as server:
        message = client_for(server).messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
    assert message.content[0].text == "second try"
    assert [r.status for r in server.requests] == [0, 200]
    assert server.requests[0].usage is None  # nothing was processed, nothing billed


def test_dropped_connection_without_retries_is_a_connection_error() -> None:
    with serve([Fault(kind="drop")]) as server, pytest.raises(anthropic.APIConnectionError) as caught:
        client_for(server, retries=0).messages.create(model=MODEL, max_tokens=10, messages=[user("hi")])
    assert not isinstance(caught.value, anthropic.APITimeoutError)  # dropped at once, not waited out
    assert [r.status for r in server.requests] == [NO_RESPONSE] and server.requests[0].usage is None


@pytest.mark.parametrize("retries", [0, 2])
def test_cut_stream_is_a_connection_error_mid_stream_and_is_not_retried(retries: int) -> None:
    partial = Reply([text_block("one two three four five six seven eight nine")])
    # message_start, content_block_start, ping, first text delta, then the line goes dead.
    with serve([Fault(kind="cut", after_events=4, reply=partial), Reply.text("unused")]) as server:
        client = client_for(server, retries=retries)
        received: list[str] = []
        types: list[str] = []
        with (
            pytest.raises(anthropic.APIConnectionError) as caught,
            client.messages.stream(model=MODEL, max_tokens=10, messages=[user("hi")]) as stream,
        ):
            for event in stream:
                types.append(event.type)
                if event.type == "text":
                    received.append(event.text)
    assert not isinstance(caught.value, anthropic.APITimeoutError)  # the line went dead, nothing waited
    # the stream ended early: the first words, and nothing after them
    assert received == ["one two three "]
    assert types[-1] == "text" and "content_block_stop" not in types and "message_stop" not in types
    assert len(server.requests) == 1 and server.remaining == 1
    assert server.requests[0].usage is not None  # the prompt was still processed and billed


def test_concurrent_clients_are_all_recorded_and_billed_consistently() -> None:
    request = {"system": system(), "messages": [user("hi")]}
    with serve() as server:
        ask(client_for(server), **request)  # warm the cache so every concurrent call should read
        errors: list[BaseException] = []

        def worker() -> None:
            client = client_for(server)
            try:
                for _ in range(5):
                    assert ask(client, **request)["cache_read_input_tokens"] == tokens_of(system()[0])
            except BaseException as exc:  # noqa: BLE001 - re-raised in the main thread below
                errors.append(exc)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(server.requests) == 41 and all(r.status == 200 for r in server.requests)
    assert server.cache_stats() == {"entries": 1, "reads": 40, "writes": 1}


# -- answers that break after a 200 ----------------------------------------------
# What the SDK makes of each, as observed here: several are accepted as if complete, which is
# why scribe's client checks for message_stop and a stop reason itself.

LONG = Reply([text_block("one two three four five six seven eight nine")])


def stream_once(server: FakeMessagesServer, timeout: float | None = None) -> tuple[list[str], list[str], Any]:
    """Stream one call: the event types and texts seen, then the final message (or the error)."""
    options: dict[str, Any] = {} if timeout is None else {"timeout": anthropic.Timeout(timeout)}
    client = anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0, **options)
    types: list[str] = []
    texts: list[str] = []
    try:
        with client.messages.stream(model=MODEL, max_tokens=10, messages=[user("hi")]) as stream:
            for event in stream:
                types.append(event.type)
                if event.type == "text":
                    texts.append(event.text)
            return types, texts, stream.get_final_message()
    except Exception as exc:  # noqa: BLE001 - returned for the test to examine
        return types, texts, exc


def test_no_stop_ends_cleanly_without_message_stop_and_the_sdk_calls_it_done() -> None:
    with serve([Fault(kind="no_stop", reply=LONG)]) as server:
        types, texts, final = stream_once(server)
    assert "message_stop" not in types and types[-1] == "message_delta"
    assert "".join(texts) == LONG.blocks[0]["text"]
    assert final.stop_reason == "end_turn"  # the trap: nothing says the answer was incomplete


def test_null_stop_sends_message_stop_with_no_stop_reason() -> None:
    with serve([Fault(kind="null_stop", reply=LONG)]) as server:
        types, _, final = stream_once(server)
    assert types[-1] == "message_stop"
    assert final.stop_reason is None and final.content[0].text == LONG.blocks[0]["text"]


def test_short_closes_cleanly_after_some_text() -> None:
    # message_start, content_block_start, ping, the first text delta; then a proper end of body.
    with serve([Fault(kind="short", after_events=4, reply=LONG)]) as server:
        types, texts, final = stream_once(server)
    assert texts == ["one two three "] and "message_delta" not in types
    assert final.content[0].text == "one two three " and final.stop_reason is None
    assert server.requests[0].status == 200 and server.requests[0].usage is not None


@pytest.mark.parametrize(("garbage", "error"), [
    (MALFORMED_SSE, json.JSONDecodeError),
    (b"data: \xff\xfe\n\n", UnicodeDecodeError),
], ids=["json-breaks-off", "not-utf8"])
def test_garble_sends_events_then_a_malformed_line(garbage: bytes, error: type[Exception]) -> None:
    with serve([Fault(kind="garble", after_events=4, reply=LONG, garbage=garbage)]) as server:
        _, texts, final = stream_once(server)
    assert texts == ["one two three "]
    assert isinstance(final, error)


@pytest.mark.parametrize(("body", "content_type"), [
    (b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>", "text/html"),
    (b'{"id": "msg_1", "type": "message", "content": []}', "application/json"),
    (b"", STREAM_CONTENT_TYPE),
], ids=["html", "plain-json", "empty-stream"])
def test_body_answers_200_with_exactly_the_given_bytes(body: bytes, content_type: str) -> None:
    with serve([Fault(kind="body", body=body, content_type=content_type)]) as server:
        types, _, final = stream_once(server)
        post = urllib.request.Request(
            f"{server.base_url}/v1/messages", method="POST",
            data=json.dumps({"model": MODEL, "max_tokens": 5, "messages": [user("hi")]}).encode(),
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01", "content-type": "application/json"})
        with urllib.request.urlopen(post, timeout=30) as raw:
            status, raw_type = raw.status, raw.headers["content-type"]
    assert types == [] and isinstance(final, AssertionError)  # get_final_message finds no message
    assert server.requests[0].status == 200 and server.requests[0].usage is None
    # The second request spends the exhausted script's default reply, not the fault again.
    assert status == 200 and "application/json" in raw_type


def test_body_with_bytes_that_are_not_utf8() -> None:
    latin1 = "event: message_start\ndata: café\n\n".encode("latin-1")
    with serve([Fault(kind="body", body=latin1)]) as server:
        _, _, final = stream_once(server)
    assert isinstance(final, UnicodeDecodeError)


def test_a_lone_surrogate_goes_out_escaped_and_breaks_the_sdk_on_tool_input() -> None:
    with serve([Reply([text_block("a\ud800b"), tool_use_block("write_file", {"path": "a", "content": "x\udc00"})])]) as server:
        _, texts, final = stream_once(server)
    assert texts == ["a\ud800b"]  # text reaches the caller holding a lone surrogate
    assert isinstance(final, UnicodeEncodeError)  # the SDK encodes tool input fragments to UTF-8


def test_hang_answers_nothing_until_the_client_gives_up() -> None:
    with serve([Fault(kind="hang")]) as server:
        types, _, final = stream_once(server, timeout=0.3)
    # stop() released the handler that would otherwise hang for good (serve() checked no errors)
    assert types == [] and isinstance(final, anthropic.APITimeoutError)
    assert server.requests[0].status == NO_RESPONSE


def test_stall_freezes_mid_stream() -> None:
    with serve([Fault(kind="stall", after_events=4, reply=LONG)]) as server:
        _, texts, final = stream_once(server, timeout=0.3)
    assert texts == ["one two three "]  # the first words came, then silence
    assert isinstance(final, anthropic.APITimeoutError)
    assert server.requests[0].status == 200 and server.requests[0].usage is not None


def test_unknown_fault_kinds_and_negative_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown Fault kind"):
        Fault(kind="explode")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="after_events"):
        Fault(kind="short", after_events=-1)
    assert set(FAULT_KINDS) >= {"hang", "stall", "short", "no_stop", "null_stop", "garble", "body"}


def test_a_client_that_hangs_up_mid_body_sent_no_request() -> None:
    """A process killed while sending leaves half a body: no request reached the API, so none is
    recorded (the crash tests assert every recorded request was valid)."""
    import socket

    with FakeMessagesServer([Reply.text("never sent")]) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        body = b'{"model": "claude-sonnet-5-5", "max_tokens": 10, "messa'
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
                         b"x-api-key: k\r\nanthropic-version: 2023-06-01\r\n"
                         b"Content-Length: 400\r\n\r\n" + body)
            conn.shutdown(socket.SHUT_WR)
            assert conn.recv(100) == b""  # hung up on, not answered
        assert server.requests == []
        assert server.errors == []
        assert server.remaining == 1
