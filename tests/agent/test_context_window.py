"""The context window as a fact of the session (model/window.py): learned from the server's own
report or a refused request's words, shown in `scribe config` and `/stats`, setting the
compression thresholds; and a request refused for its size compressed and retried once, through
the real executable and the fake API taught a window of its own."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from helpers import as_a_person, events_of, run_scribe, scribe_env, session_logs
from repl_driver import open_repl
from scribe.cli.repl.stats import context_field, tokens
from scribe.cli.repl.view import View
from scribe.context.render import canonical_json
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.fakeapi.sidecalls import SideCallModel, side_call_kind
from scribe.log.events import (
    AssistantEvent,
    ContextWindowEvent,
    ErrorEvent,
    LeftOutEvent,
    ObservationEvent,
    UsageEvent,
    UserEvent,
)
from scribe.model.window import (
    ContextWindow,
    anthropic_url,
    effective_window,
    limits,
    props_urls,
    read_overflow,
)
from scribe.settings.values import load_settings

WINDOW = 6_000  # fake tokens (4 bytes each): room for scribe's instructions and tools, and a little more


def paste(tag: str, tokens: int) -> str:
    """A text of about `tokens` fake tokens, different for each tag (nothing to cache by chance)."""
    words = []
    size = 0
    i = 0
    while size < tokens * 4:
        word = f"{tag}{i}"
        words.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(words)


def agent_texts(server: FakeMessagesServer) -> list[tuple[int, str]]:
    """(status, the last user text) of each agent request the server received, in order."""
    out = []
    for r in server.requests:
        if side_call_kind(r.json) != "agent":
            continue
        content = r.json["messages"][-1]["content"]
        out.append((r.status, "".join(b.get("text", "") for b in content if b.get("type") == "text")))
    return out


@pytest.mark.parametrize(("kind", "model", "words"), [
    ("anthropic", "claude-sonnet-5-5", f"prompt is too long: {{n}} tokens > {WINDOW} maximum"),
    ("llama.cpp", "local", f"request ({{n}} tokens) exceeds the available context size ({WINDOW} tokens)"),
])
def test_a_request_refused_for_its_size_is_compressed_and_sent_once_more(
        workspace: Path, home: Path, kind: str, model: str, words: str) -> None:
    # The table says 200,000 for Claude, the llama.cpp server is behind a proxy that passes no
    # /props: the window is not known until a request is refused for its size.
    agent = SideCallModel([Reply.text("Noted the first text."), Reply.text("The second text is noted too.")])
    first, second = "Keep this: the code word is PLUM.\n" + paste("a", 2_400), paste("b", 2_800)
    with FakeMessagesServer(agent, context_window=WINDOW, kind=kind, answers_props=False) as server:
        env = scribe_env(server.base_url, home)
        one = run_scribe(["run", "-m", model, first], workspace, env)
        two = run_scribe(["run", "-c", second], workspace, env)
        shown = run_scribe(["config"], workspace, env)
    assert one.code == 0, one.err
    assert two.code == 0, two.err
    assert "The second text is noted too." in two.out
    assert f"did not fit the model's {WINDOW:,}-token context window; compressing and trying once more" in two.err

    # the server refused the second turn once, in its own words, then took the same turn, smaller
    sent = agent_texts(server)
    assert [status for status, _ in sent] == [200, 400, 200]
    assert sent[1][1] == sent[2][1] == second
    refused = next(r for r in server.requests if r.status == 400)
    assert refused.error is not None and read_overflow(refused.error) is not None
    assert words.split("{n}")[0] in refused.error and words.split("{n}")[1] in refused.error
    kinds = [side_call_kind(r.json) for r in server.requests]
    # the last observer call is the compression after the answer: the second paste, due too
    assert kinds == ["agent", "agent", "observer", "agent", "observer"]
    retry = [r for r in server.requests if side_call_kind(r.json) == "agent"][-1]
    assert "the code word is PLUM" in json.dumps(retry.json["system"])  # the first turn, as an observation

    # the log holds each turn once: one user event and one answer per turn, no trace of a retry
    log = session_logs(workspace)[0]
    events = events_of(log)
    users = [e for e in events if isinstance(e, UserEvent)]
    assert [u.text for u in users] == [first, second]
    assert len([e for e in events if isinstance(e, AssistantEvent)]) == 2
    assert [u.purpose for u in events if isinstance(u, UsageEvent)] == ["agent", "observer", "agent", "observer"]
    learned = [e for e in events if isinstance(e, ContextWindowEvent)]
    assert [(e.tokens, e.source) for e in learned] == [(WINDOW, "error")]
    assert [e for e in events if isinstance(e, ObservationEvent)][0].seq_to < users[1].seq
    assert not [e for e in events if isinstance(e, LeftOutEvent)]
    session_id = log.stem
    assert (f"the latest session, {session_id}, learned 6,000 tokens (from a request the server refused for "
            "its size)") in shown.out

    # what was sent is what the log rebuilds, the retried request included
    ok = run_scribe(["log", "verify"], workspace, env)
    assert ok.code == 0, ok.out + ok.err
    answers = [e for e in events if isinstance(e, AssistantEvent)]
    rebuilt = run_scribe(["log", "prompt", "--at", str(answers[-1].seq)], workspace, env)
    assert rebuilt.code == 0, rebuilt.err
    assert rebuilt.out.strip() == canonical_json(retry.json)


def unmarked(messages: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    """Messages without their cache breakpoints (which move as messages are appended)."""
    return [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
            for m in messages]


def test_what_a_threshold_makes_due_is_observed_at_once_not_a_call_later(workspace: Path, home: Path) -> None:
    """One observer call reads at most the side-call limit, so before a paste larger than the
    observe threshold it covers only part of what is due. The rest is observed in the same turn:
    the next turn's request extends this one's (its cached prefix is served), rather than
    changing after the observations again and sending the whole paste to be evaluated anew."""
    agent = SideCallModel([Reply.text(f"Answer {i}.") for i in range(6)])
    prompts = [paste("a", 5_000), "And the first word?", "And the last word?", paste("b", 5_000),
               "And its first word?"]
    with FakeMessagesServer(agent, context_window=12_000) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CONTEXT_TOKENS="12000", SCRIBE_SIDE_CALL_TOKENS="1500")
        for k, text in enumerate(prompts):
            ran = run_scribe(["run", *(["-c"] if k else []), text], workspace, env)
            assert ran.code == 0, ran.err
    agent_requests = [r.json for r in server.requests if side_call_kind(r.json) == "agent"]
    observer_calls = [r for r in server.requests if side_call_kind(r.json) == "observer"]
    assert len(agent_requests) == len(prompts) and observer_calls
    fourth, fifth = agent_requests[3], agent_requests[4]
    assert fifth["system"] == fourth["system"]  # no observation came between them
    # the fifth extends the fourth, up to the breakpoints that move with the last messages
    assert unmarked(fifth["messages"])[: len(fourth["messages"])] == unmarked(fourth["messages"])
    events = events_of(session_logs(workspace)[0])
    users = [e for e in events if isinstance(e, UserEvent)]
    observed = [e for e in events if isinstance(e, ObservationEvent)]
    # the observations were made in the fourth turn, before its request; all before the paste (the
    # short exchanges after the first paste stay raw: an observation of them would not be smaller)
    assert observed and all(users[3].seq < e.seq < users[4].seq for e in observed)
    assert all(e.seq_to < users[3].seq for e in observed)


def test_a_message_that_cannot_fit_says_so_and_the_session_goes_on(workspace: Path, home: Path) -> None:
    agent = SideCallModel([Reply.text("Hello."), Reply.text("Yes, still here.")])
    huge = paste("h", WINDOW + 1_000)
    with FakeMessagesServer(agent, context_window=WINDOW, kind="llama.cpp", answers_props=False) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "-m", "local", "hello"], workspace, env).code == 0
        failed = run_scribe(["run", "-c", huge], workspace, env)
        after = run_scribe(["run", "-c", "are you still there?"], workspace, env)
    assert failed.code == 1
    lines = [line for line in failed.err.splitlines() if line.startswith("scribe: ")]
    assert len(lines) == 1, failed.err
    assert "does not fit the model's 6,000-token context window even with everything earlier compressed; " \
           "shorten it or use a model with a larger window" in lines[0]
    assert "this message (" in lines[0] and "left out of later requests" in lines[0]

    assert after.code == 0, after.err
    assert "Yes, still here." in after.out
    sent = agent_texts(server)
    # refused once, not retried as it was (nothing earlier to compress), and never sent again
    assert [status for status, _ in sent] == [200, 400, 200]
    assert huge not in json.dumps([r.json for r in server.requests][-1])
    events = events_of(session_logs(workspace)[0])
    left = [e for e in events if isinstance(e, LeftOutEvent)]
    assert len(left) == 1 and left[0].window == WINDOW
    huge_event = next(e for e in events if isinstance(e, UserEvent) and e.text == huge)
    assert left[0].seq_from == huge_event.seq  # the log keeps the message; requests leave it out
    assert run_scribe(["log", "verify"], workspace, env).code == 0
    shown = run_scribe(["log", "show", "-t", "left_out", "-t", "context_window"], workspace, env)
    assert f"events {huge_event.seq}-" in shown.out and "left out of later requests" in shown.out
    assert "context window 6,000 tokens · a refused request named it · local" in shown.out
    # `log stats` says that memory could not make room, and why
    stats = run_scribe(["log", "stats"], workspace, env)
    assert "memory could not make room for 1 turn, left out of later requests, last: this message (" in stats.out
    memory = run_scribe(["log", "stats", "--json"], workspace, env).json()["memory"]
    assert memory["left_out"] == 1 and memory["last_left_out"] == left[0].reason


def test_the_window_a_server_reports_is_shown_and_sets_the_thresholds(workspace: Path, home: Path) -> None:
    # llama.cpp answers /props: the window is known before any request, and compression starts
    # well before the window is reached although observe_tokens is 30,000.
    agent = SideCallModel([Reply.text(f"Noted part {k}.") for k in range(6)])
    with FakeMessagesServer(agent, context_window=WINDOW, kind="llama.cpp") as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="local")
        shown = run_scribe(["config"], workspace, env)
        as_json = run_scribe(["config", "--json"], workspace, env)
        runs = [run_scribe(["run", *(["-c"] if k else []), f"part {k}: " + paste(f"p{k}", 900)], workspace, env)
                for k in range(6)]
    assert shown.code == 0, shown.err
    assert "context window of local: 6,000 tokens (from the server's own report); observe past " in shown.out
    window = as_json.json()["context_window"]["value"]
    assert (window["tokens"], window["source"]) == (WINDOW, "server")
    assert window["observe_tokens"] < 3_000 and window["reflect_tokens"] < window["observe_tokens"]
    assert window["side_call_tokens"] == int(WINDOW * 0.6)

    assert all(r.code == 0 for r in runs), [r.err for r in runs]
    assert all(r.status == 200 for r in server.requests)  # nothing was ever refused
    assert agent.calls["observer"] >= 2
    biggest = max(sum(r.usage[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
                  for r in server.requests if r.usage)
    assert biggest <= WINDOW
    events = events_of(session_logs(workspace)[0])
    learned = [e for e in events if isinstance(e, ContextWindowEvent)]
    assert [(e.tokens, e.source) for e in learned] == [(WINDOW, "server")]  # asked at each start, recorded once


def test_stats_show_the_window_the_session_learned(workspace: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    as_a_person(monkeypatch, workspace, tmp_path / "home")
    out = io.StringIO()
    agent = SideCallModel([Reply.text("Noted.")])
    with FakeMessagesServer(agent, context_window=WINDOW, kind="llama.cpp") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text("hello\r/stats\r\x04")
            settings = load_settings(workspace, {"permission_mode": "ask", "max_retries": 0, "model": "local"})
            with open_repl(workspace, settings, View(Console(file=out, width=200))) as repl:
                repl.loop()
                toolbar = repl.toolbar()
    text = out.getvalue()
    assert "window       6,000 tokens (from the server's own report); observe past " in text
    assert "cost         unpriced" in text
    billed = server.requests[-1].usage
    assert billed is not None
    counted = billed["input_tokens"] + billed["cache_read_input_tokens"] + billed["cache_creation_input_tokens"]
    assert f"context {tokens(counted)} of 6.0k (obs " in toolbar  # as the server counted the last request
    assert f"last request {counted:,} tokens, as the server counted them" in text
    assert " │ unpriced │ " in toolbar


def test_thresholds_are_shares_of_the_window_only_where_the_configured_ones_do_not_fit() -> None:
    claude = limits(ContextWindow(200_000, "table"), observe=30_000, reflect=40_000, side_call=50_000,
                    max_tokens=16_384, fixed=5_000)
    assert (claude.observe, claude.reflect, claude.side_call) == (30_000, 40_000, 50_000)
    assert claude.prompt == 200_000 - 16_384
    small = limits(ContextWindow(4_096, "server"), observe=30_000, reflect=40_000, side_call=50_000,
                   max_tokens=16_384, fixed=1_500)
    usable = 4_096 - 512 - 1_500
    assert (small.observe, small.reflect, small.side_call, small.prompt) == (
        usable // 2, usable // 4, int(4_096 * 0.6), 4_096 - 512)
    unknown = limits(None, observe=30_000, reflect=40_000, side_call=50_000, max_tokens=16_384, fixed=1_500)
    assert (unknown.observe, unknown.reflect, unknown.side_call, unknown.prompt) == (30_000, 40_000, 50_000, None)


@pytest.mark.parametrize(("message", "requested", "window"), [
    ("request (5413 tokens) exceeds the available context size (4096 tokens), try increasing it", 5413, 4096),
    ("prompt is too long: 210000 tokens > 200000 maximum", 210_000, 200_000),
    ("input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or "
     "`max_tokens` and try again", 188_240, 200_000),
])
def test_the_overflow_words_of_each_server_are_read(message: str, requested: int, window: int) -> None:
    overflow = read_overflow(message)
    assert overflow is not None and (overflow.requested, overflow.window) == (requested, window)
    assert read_overflow("max_tokens: 300000 > 64000, which is the maximum allowed") is None


def test_where_a_server_is_asked_for_its_window() -> None:
    assert props_urls("http://127.0.0.1:8080") == ["http://127.0.0.1:8080/props"]
    # a base URL that ends in a path (a proxy's): beside the Messages path first, then the root
    assert props_urls("http://gpu-box:8080/llama/") == ["http://gpu-box:8080/llama/props", "http://gpu-box:8080/props"]
    assert anthropic_url(None) and anthropic_url("https://api.anthropic.com") and not anthropic_url("http://localhost")


def test_which_window_wins() -> None:
    refused = ContextWindow(4_096, "error")
    assert effective_window("claude-sonnet-5-5", 0, None) == ContextWindow(200_000, "table")
    assert effective_window("local", 0, None) is None
    assert effective_window("local", 8_192, None) == ContextWindow(8_192, "config")
    assert effective_window("local", 8_192, refused, "local") == refused  # the server is the judge
    assert effective_window("local", 2_048, refused, "local") == ContextWindow(2_048, "config")
    assert effective_window("claude-sonnet-5-5", 0, refused, "claude-sonnet-5-5") == refused
    # a switch to a model the table knows leaves what was learned of the other behind
    assert effective_window("claude-opus-5", 0, refused, "claude-sonnet-5-5") == ContextWindow(200_000, "table")


def han(tag: int, chars: int) -> str:
    """Chinese text: a character is a token or so to a real tokenizer (three bytes, ~0.75 to the
    fake's), where the local estimate counts 3.6 characters a token. An estimate that far below
    the server's count is what a refusal for size corrects."""
    return "".join(chr(0x4E00 + (tag * 7919 + i * 104_729) % 20_000) for i in range(chars))


def test_a_refused_request_the_estimate_says_fits_is_compressed_not_left_out(workspace: Path, home: Path) -> None:
    """The server refuses the second turn for its size, naming its count; the local estimate,
    far below it, says the request fits. Memory goes by the server's count: it compresses the
    first turn and sends the second again, which is answered, instead of leaving it out."""
    agent = SideCallModel([Reply.text("Noted the text."), Reply.text("It is about characters.")])
    first, second = "Keep this text.\n" + han(1, 5_000), "What is it about? " + han(2, 1_300)
    with FakeMessagesServer(agent, context_window=WINDOW, kind="llama.cpp", answers_props=False) as server:
        env = scribe_env(server.base_url, home)
        one = run_scribe(["run", "-m", "local", first], workspace, env)
        two = run_scribe(["run", "-c", second], workspace, env)
        stats = run_scribe(["log", "stats"], workspace, env)
    assert one.code == 0, one.err
    assert two.code == 0 and "It is about characters." in two.out, two.err
    assert [status for status, _ in agent_texts(server)] == [200, 400, 200]
    events = events_of(session_logs(workspace)[0])
    assert not [e for e in events if isinstance(e, LeftOutEvent)]
    assert [e for e in events if isinstance(e, ObservationEvent)], "nothing was compressed"
    assert "memory could not make room" not in stats.out


def test_the_bar_counts_no_tools_a_server_drops_and_then_shows_its_count(workspace: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A llama.cpp server whose model's chat template has no tools (SmolLM2's) drops them and
    counts the instructions alone: an empty session's bar estimates that (marked ~), not the
    tools too; after a call it shows what the server counted, exactly."""
    as_a_person(monkeypatch, workspace, tmp_path / "home")
    with FakeMessagesServer(SideCallModel([Reply.text("Hi.")]), context_window=4096, kind="llama.cpp",
                            template_tools=False) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text("hello\r\x04")
            settings = load_settings(workspace, {"permission_mode": "ask", "max_retries": 0, "model": "local"})
            with open_repl(workspace, settings, View(Console(file=io.StringIO(), width=200))) as repl:
                empty = repl.numbers()
                repl.loop()
                after = repl.numbers()
    billed = server.requests[0].usage
    assert billed is not None
    counted = billed["input_tokens"] + billed["cache_read_input_tokens"] + billed["cache_creation_input_tokens"]
    assert empty.counted is None and context_field(empty).startswith("context ~")
    # the estimate is of what the server counts: well within a third of it, not several times it
    assert abs(empty.context.total - counted) < counted / 3, (empty.context.total, counted)
    assert after.counted == counted and context_field(after).startswith(f"context {tokens(counted)} of 4.1k")


def test_what_the_prompt_shows_nothing_of_is_never_sent_to_the_observer(workspace: Path, home: Path) -> None:
    """A session on a llama.cpp server begins with the window it reported and the news that it
    gives no tools: events the prompt shows nothing of. A first message past the observe
    threshold makes a compression due, and all there is before it is those: no observer call is
    made for them (it could make nothing smaller, and its refused answer would back off the
    compression the paste then needs)."""
    agent = SideCallModel([Reply.text("Noted.")])
    with FakeMessagesServer(agent, context_window=4096, kind="llama.cpp", template_tools=False) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="local")
        ran = run_scribe(["run", "Keep this.\n" + paste("k", 2_200)], workspace, env)
    assert ran.code == 0, ran.err
    assert [side_call_kind(r.json) for r in server.requests] == ["agent"]
    events = events_of(session_logs(workspace)[0])
    assert not [e for e in events if isinstance(e, ErrorEvent)], [e.message for e in events if isinstance(e, ErrorEvent)]


def test_a_request_the_window_cannot_hold_is_made_to_fit_before_it_is_sent(workspace: Path, home: Path) -> None:
    """A small model writes its first answer on and on; the next request, by the server's count
    of the last one, cannot fit the window, and the retention floor would keep that long answer
    raw. It is compressed as hard as needed before it is sent, instead of being sent, refused
    for its size, and compressed then."""
    agent = SideCallModel([Reply.text(paste("said", 3_800)), Reply.text("Four.")])
    with FakeMessagesServer(agent, context_window=4096, kind="llama.cpp", template_tools=False) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="local")
        first = run_scribe(["run", "hi"], workspace, env)
        second = run_scribe(["run", "-c", "what is 2+2?"], workspace, env)
    assert first.code == 0 and second.code == 0, second.err
    assert "Four." in second.out
    assert [status for status, _ in agent_texts(server)] == [200, 200]  # nothing refused for its size
    events = events_of(session_logs(workspace)[0])
    assert [e for e in events if isinstance(e, ObservationEvent)] and not [e for e in events
                                                                          if isinstance(e, LeftOutEvent)]
