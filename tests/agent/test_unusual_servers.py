"""Servers that are not the API: one whose stream carries no usage, one where nothing listens.
Through the real executable, against the fake server with the habit of such a server."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.agent.compression.compressor import ContextSize
from scribe.agent.session.abilities import written_call
from scribe.cli.repl.stats import numbers, toolbar_text
from scribe.context.render import canonical_json
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel
from scribe.log.events import AssistantEvent, NoToolsEvent, UsageEvent
from scribe.log.pricing import LIST_PRICES


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


def _tools_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "tools: the server gives" in line]


def test_a_server_that_drops_tools_is_said_once_recorded_and_known_to_a_continued_session(
        workspace: Path, home: Path) -> None:
    """llama.cpp with a model whose chat template has no tools (SmolLM2's): its /props says so,
    and it passes no tools to the model, which answers in text."""
    seen: list[dict] = []

    def model(request: dict) -> Reply:
        seen.append(request)
        return Reply.text("Here is the file content: hello")

    with FakeMessagesServer(model, kind="llama.cpp", template_tools=False) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="smollm2", SCRIBE_OBSERVER_MODEL="smollm2")
        first = run_scribe(["run", "write hello to a.txt"], workspace, env)
        second = run_scribe(["run", "-c", "did you write it?"], workspace, env)
        sent = [r.json for r in server.requests]
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert all("tools" not in r for r in seen) and all(r["tools"] for r in sent)  # sent, and dropped
    for ran in (first, second):
        assert _tools_lines(ran.err) == [
            "scribe: note: tools: the server gives smollm2 no tools (its /props says the chat template has "
            "none); the session goes on as chat, and the model cannot read or change files or run commands"], ran.err
    assert not (workspace / "a.txt").exists()
    [log] = session_logs(workspace)
    events = events_of(log)
    assert [(e.model, e.source) for e in events if isinstance(e, NoToolsEvent)] == [("smollm2", "server")]
    assert run_scribe(["log", "verify"], workspace, env).code == 0
    answers = [e for e in events if isinstance(e, AssistantEvent)]
    rebuilt = run_scribe(["log", "prompt", "--at", str(answers[-1].seq)], workspace, env)
    assert rebuilt.out.strip() == canonical_json(sent[-1])  # what was sent, byte for byte


def test_an_answer_that_writes_a_tool_call_as_text_is_said_once(workspace: Path, home: Path) -> None:
    """A server that reports nothing of itself (behind a proxy): the first answer that writes a
    tool call out as text instead of making it tells the person, once, and the log keeps it."""
    written = 'I will do that. <tool_call>{"name": "write_file", "arguments": {"path": "a.txt", "content": "hi"}}'
    replies = [Reply.text(written), Reply.text(written), Reply.text(written)]
    with FakeMessagesServer(replies, kind="llama.cpp", answers_props=False) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="local", SCRIBE_OBSERVER_MODEL="local")
        first = run_scribe(["run", "write hi to a.txt"], workspace, env)
        second = run_scribe(["run", "-c", "again please"], workspace, env)
    assert (first.code, second.code) == (0, 0), first.err + second.err
    assert _tools_lines(first.err) == [
        "tools: the server gives local no tools (an answer wrote a tool call out as text); the session goes on "
        "as chat, and the model cannot read or change files or run commands"], first.err
    assert len(_tools_lines(second.err)) == 1 and "note: tools:" in second.err  # from the log, at the start
    [log] = session_logs(workspace)
    [learned] = [e for e in events_of(log) if isinstance(e, NoToolsEvent)]
    assert learned.source == "answer" and learned.detail.startswith('<tool_call>{"name": "write_file"')


@pytest.mark.parametrize(("text", "found"), [
    ('<tool_call>{"name": "x"}', True),
    ('```json\n{"name": "write_file", "arguments": {"path": "a"}}\n```', True),
    ('{"name": "write_file", "parameters": {}}', True),
    ('{"name": "not_a_tool", "arguments": {}}', False),
    ("I would use write_file(path, content) for that, but you asked me only to explain it.", False),
    ('The JSON {"name": "write_file"} names a tool.', False),
])
def test_what_counts_as_a_tool_call_written_as_text(text: str, found: bool) -> None:
    content = [{"type": "text", "text": text}]
    assert (written_call(content, ["write_file", "read_file"]) is not None) == found
    assert written_call([*content, {"type": "tool_use", "id": "t", "name": "read_file", "input": {}}],
                        ["write_file"]) is None  # a real call was made


def _paste(tag: str, words: int) -> str:
    return "Keep this text in mind:\n" + " ".join(f"{tag}{n}" for n in range(words))


def test_side_calls_through_a_proxy_that_passes_anthropics_answers_on_ask_for_the_observer_model(
        workspace: Path, home: Path) -> None:
    """A base URL that is not Anthropic's, answered with Anthropic's header (a proxy passing its
    answers on; the fake API sends it): `observer_model` left unset observes with Haiku, as on
    Anthropic's own URL, once an agent call shows who answers. A llama.cpp server's observer is
    the agent's model (the test below)."""
    agent = SideCallModel([Reply.text(f"Answer {i}.") for i in range(6)])
    with FakeMessagesServer(agent, context_window=4096) as server:
        env = scribe_env(server.base_url, home)
        ran = [run_scribe(["run", "-o", "json", *(["-c"] if i else []), _paste(f"p{i}", 900)], workspace, env)
               for i in range(3)]
        config = run_scribe(["config"], workspace, env)
    assert [r.code for r in ran] == [0, 0, 0], [r.err for r in ran]
    usage = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, UsageEvent)]
    assert {u.server for u in usage} == {None}  # priced as Anthropic's: its header came back
    observed = [u for u in usage if u.purpose == "observer"]
    assert observed and all(u.extra["side_call"]["route"] == "cache" or u.model == "claude-haiku-5-5"
                            for u in observed), [(u.model, u.extra.get("side_call")) for u in observed]
    assert any(u.model == "claude-haiku-5-5" for u in observed)
    assert all(r.json()["usage"]["cost_usd"] is not None for r in ran)
    [said] = [line.split() for line in config.out.splitlines() if line.startswith("observer_model ")]
    assert said[:2] == ["observer_model", "auto"]


def test_a_session_on_a_server_that_is_not_anthropics_shows_no_dollar_figure(workspace: Path, home: Path) -> None:
    """A llama.cpp server asked for Claude's names (nothing set but the base URL): its calls,
    the observer's included, are no Claude bill. Every figure says unpriced, none a dollar."""
    agent = SideCallModel([Reply.text(f"Answer {i}.") for i in range(6)])
    with FakeMessagesServer(agent, context_window=4096, kind="llama.cpp") as server:
        env = scribe_env(server.base_url, home)
        ran = [run_scribe(["run", "-o", "json", *(["-c"] if i else []), _paste(f"p{i}", 900)], workspace, env)
               for i in range(3)]
        stats = run_scribe(["log", "stats"], workspace, env)
        stats_json = run_scribe(["log", "stats", "--json"], workspace, env)
        listed = run_scribe(["log", "list"], workspace, env)
        page = run_scribe(["log", "html", "-o", str(workspace / "page.html")], workspace, env)
        config = run_scribe(["config"], workspace, env)
    assert [r.code for r in ran] == [0, 0, 0], [r.err for r in ran]
    assert agent.calls["observer"] >= 1  # a side call was made, and is priced no more than the rest
    for r in ran:
        assert r.json()["usage"]["cost_usd"] is None and "$" not in r.out, r.out
    for shown in (stats, listed):
        assert shown.code == 0 and "unpriced" in shown.out and not re.search(r"\$\d", shown.out), shown.out
    assert stats_json.json()["total"]["cost_usd"] is None, stats_json.out
    # why, truly: the model has a list price, but no call of it was Anthropic's to bill
    assert "claude-sonnet-5-5 answered by a server that is not Anthropic's has no Claude price" in " ".join(
        stats.out.split()), stats.out
    assert page.code == 0 and not re.search(r"\$\d", (workspace / "page.html").read_text()), page.err
    [log] = session_logs(workspace)
    events = events_of(log)
    usage = [e for e in events if isinstance(e, UsageEvent)]
    assert {u.server for u in usage} == {urlsplit(server.base_url).netloc}
    assert {u.model for u in usage if u.purpose == "observer"} == {"claude-sonnet-5-5"}  # the agent's model
    [said] = [line.split() for line in config.out.splitlines() if line.startswith("observer_model ")]
    assert said[:3] == ["observer_model", "auto", "default:"] and "not Anthropic's" in " ".join(said)
    bar = toolbar_text(numbers(events, "ask", ContextSize(1000, 0, 10), usage=usage, price=LIST_PRICES.price_usage))
    assert "unpriced" in bar and "$" not in bar, bar
