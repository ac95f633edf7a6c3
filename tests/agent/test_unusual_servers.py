"""Servers that are not the API: one whose stream carries no usage, one where nothing listens.
Through the real executable, against the fake server with the habit of such a server."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from helpers import run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply


@pytest.mark.parametrize("habit", ["omitted", "null", "no_delta"])
def test_a_stream_without_usage_is_read_as_zero_usage_with_one_note(workspace: Path, home: Path, habit: str) -> None:
    with FakeMessagesServer([Reply.text("first answer"), Reply.text("second answer")], usage=habit) as server:
        env = scribe_env(server.base_url, home)
        first = run_scribe(["run", "hello"], workspace, env)
        second = run_scribe(["run", "--continue", "and again"], workspace, env)
        calls = len(server.requests)
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert (first.out.strip(), second.out.strip()) == ("first answer", "second answer")
    assert calls == 2  # no retries: the answer was whole
    for ran in (first, second):
        notes = [line for line in ran.err.splitlines() if "sent no" in line]
        assert len(notes) == 1, ran.err
        assert ("output token count" in notes[0]) == (habit == "no_delta"), notes
    [log] = session_logs(workspace)
    usage = [json.loads(line) for line in log.read_text().splitlines() if '"type": "usage"' in line
             or '"type":"usage"' in line]
    assert [u["output"] for u in usage] == [0, 0]
    if habit == "no_delta":  # message_start's counts are the server's own, kept
        assert all(u["input"] + u["cache_read"] + u["cache_write"] > 0 for u in usage), usage
    else:
        assert [(u["input"], u["cache_read"], u["cache_write"]) for u in usage] == [(0, 0, 0)] * 2
    assert run_scribe(["log", "verify"], workspace, env).code == 0
    stats = run_scribe(["log", "stats", "--json"], workspace, env)
    assert stats.code == 0, stats.err


def test_a_stream_that_opens_without_message_start_is_a_whole_answer(workspace: Path, home: Path) -> None:
    """llama.cpp's server leaves message_start out when the answer's first token is part of a
    character (an emoji written in two tokens); the rest of the stream is whole."""
    replies = [Reply.text("\U0001f7e2 first answer"), Reply.text("\U0001f522 second answer")]
    with FakeMessagesServer(replies, usage="no_start") as server:
        env = scribe_env(server.base_url, home)
        first = run_scribe(["run", "hello"], workspace, env)
        second = run_scribe(["run", "--continue", "and again"], workspace, env)
        calls = len(server.requests)
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert (first.out.strip(), second.out.strip()) == ("\U0001f7e2 first answer", "\U0001f522 second answer")
    assert calls == 2  # no retries: the answer was whole
    for ran in (first, second):
        notes = [line for line in ran.err.splitlines() if "sent no message_start" in line]
        assert len(notes) == 1, ran.err
    [log] = session_logs(workspace)
    usage = [json.loads(line) for line in log.read_text().splitlines() if '"type":"usage"' in line]
    # the input counts came with the start that was left out; the output count came after it
    assert [(u["input"], u["cache_read"], u["output"] > 0, u["model"]) for u in usage] == [(0, 0, True, "claude-sonnet-5-5")] * 2
    assert run_scribe(["log", "verify"], workspace, env).code == 0


def test_a_server_with_usage_says_nothing_about_it(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("answer")]) as server:
        ran = run_scribe(["run", "hello"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0 and "usage" not in ran.err, ran.err


def _unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_connection_is_reported_at_once_in_those_words(workspace: Path, home: Path) -> None:
    port = _unused_port()
    env = scribe_env(f"http://127.0.0.1:{port}", home, SCRIBE_CURATE_NOTES="true")
    ran = run_scribe(["run", "hello"], workspace, env)
    assert ran.code != 0
    lines = [line for line in ran.err.splitlines() if line.strip()]
    # one line, no retries first: nothing listening is not a connection lost mid-way
    assert lines == [f"scribe: model call failed: could not connect to 127.0.0.1:{port}: connection refused "
                     "(no server is listening there; is it running, and does ANTHROPIC_BASE_URL name it?)"], ran.err
