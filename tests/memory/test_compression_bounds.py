"""Compression never makes the prompt grow, never takes the turn being answered, and, where the
numbers say so, reads the stretch it compresses through the agent's cached prefix: against the
fake API's cache accounting, with `scribe log prompt --at` rebuilding the side call's request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import agent_for, events_of, run_scribe, scribe_env, session_logs
from scribe.agent.protocol import Compressed, Notice, TurnEnded
from scribe.agent.session.session import Session
from scribe.agent.session.start import start_session
from scribe.context.render import canonical_json
from scribe.fakeapi import FakeMessagesServer, Reply, side_call_body, side_call_kind
from scribe.log.events import ObservationEvent, UsageEvent, UserEvent
from scribe.log.jsonl import read_log
from scribe.memory.routes import choose_route
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions

FACT = "the build cache lives in /var/cache/ledger-7"


def paste(k: int, lines: int = 40) -> str:
    return f"Text {k}: " + "\n".join(f"line {k}.{i}: the quick brown fox jumps over dog {i * k}" for i in range(lines))


class Model:
    """Agent calls answer in one short line; observer calls with `observe(body)`."""

    def __init__(self, observe: Any) -> None:
        self.observe = observe
        self.side: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> Reply:
        if side_call_kind(request) == "observer":
            self.side.append(request)
            return Reply.text(self.observe(side_call_body(request)))
        if side_call_kind(request) == "reflector":
            return Reply.text("")
        return Reply.text("Noted.")


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    servers: list[FakeMessagesServer] = []

    def start(model: Model) -> FakeMessagesServer:
        server = FakeMessagesServer(model)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.start())
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def turns(workspace: Path, settings: Settings, prompts: list[str]) -> tuple[Session, list[Any]]:
    session = start_session(workspace, settings, tool_definitions(builtin_tools()))
    agent = agent_for(workspace, settings, session)
    seen: list[Any] = []
    for prompt in prompts:
        for event in agent.turn(prompt):
            seen.append(event)
            if isinstance(event, TurnEnded):
                assert event.reason == "end_turn", event
    session.close()
    return session, seen


SMALL = dict(permission_mode="full-auto", observe_tokens=1500, reflect_tokens=40_000, observe_on_payback=False,
             compress_when_cold=False, watch_files=False, curate_notes=False)


def test_an_observation_larger_than_its_stretch_is_refused_and_the_events_stay_raw(
        workspace: Path, api: Any) -> None:
    # `/reflect` on a short session, and a model that writes more than it read (within its budget).
    model = Model(lambda body: "\n".join(f"🔴 {line} (as the person put it, word for word)"
                                         for line in body.splitlines()[1:] if line.strip()))
    api(model)
    settings = Settings(**{**SMALL, "observe_tokens": 500, "retention": 0.0})  # type: ignore[arg-type]
    session = start_session(workspace, settings, tool_definitions(builtin_tools()))
    agent = agent_for(workspace, settings, session)
    for prompt in ("Use tabs.", "Keep lines short."):
        assert [e for e in agent.turn(prompt) if isinstance(e, TurnEnded)][-1].reason == "end_turn"
    assert agent.memory is not None
    said = list(agent.memory.compress_now(session))
    session.close()
    assert model.side  # the observer was asked, and answered
    events = read_log(session.path).events
    assert not any(isinstance(e, ObservationEvent) for e in events)  # its answer would have grown the prompt
    assert not any(isinstance(e, Compressed) for e in said)
    notes = [e.text for e in said if isinstance(e, Notice)]
    assert any("is not smaller than what it replaces" in n and "stay raw" in n for n in notes), notes


def test_the_current_turns_request_is_never_observed(workspace: Path, api: Any) -> None:
    # Short turns, then one whose request alone passes the threshold: compression at its first
    # call may take the turns before it, never the request itself.
    model = Model(lambda body: "🔴 the person sent some text\nCurrent task: reading\nNext step: answer")
    api(model)
    prompts = [f"Short note {k}: {FACT}." for k in range(6)] + [paste(99, 120)]
    session, _ = turns(workspace, Settings(**SMALL), prompts)  # type: ignore[arg-type]
    events = read_log(session.path).events
    big = next(e for e in events if isinstance(e, UserEvent) and e.text.startswith("Text 99"))
    observations = [e for e in events if isinstance(e, ObservationEvent)]
    assert observations  # the threshold was passed and something was observed
    assert all(o.seq_to < big.seq for o in observations), [(o.seq_from, o.seq_to, big.seq) for o in observations]
    # and every observer request said nothing of the current request
    assert model.side and all("Text 99" not in side_call_body(r) for r in model.side)


def test_choose_route_follows_the_prices_and_the_cache() -> None:
    # Haiku 5.5 reads the stretch uncached for less than Sonnet 5.5 reads it cached, and writes for less.
    apart = choose_route("claude-sonnet-5-5", "claude-haiku-5-5", cached=20_000, uncached=500,
                         separate_input=3_000, answer=300)
    assert apart.route == "separate" and apart.unit == "usd" and apart.separate < apart.cache
    # The same model on both sides: the cached prefix at a twentieth of its input price wins.
    same = choose_route("claude-sonnet-5-5", "claude-sonnet-5-5", cached=20_000, uncached=500,
                        separate_input=3_000, answer=300)
    assert same.route == "cache" and same.cache < same.separate
    # A local server: tokens to evaluate; nothing cached, nothing to read through.
    local = choose_route("smollm2", "smollm2", cached=3_000, uncached=200, separate_input=1_800, answer=150)
    assert local.route == "cache" and local.unit == "tokens"
    assert choose_route("smollm2", "smollm2", cached=0, uncached=3_200, separate_input=1_800, answer=150).route == \
        "separate"


def test_a_side_call_through_the_cache_reads_its_stretch_from_the_cache_and_is_rebuilt_from_the_log(
        workspace: Path, home: Path) -> None:
    # The agent's model observes too: its cached prefix costs a twentieth of reading the stretch anew.
    model = Model(lambda body: "🔴 the person pasted texts\nCurrent task: reading texts\nNext step: go on")
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="claude-sonnet-5-5",
                         SCRIBE_OBSERVER_MODEL="claude-sonnet-5-5", SCRIBE_OBSERVE_TOKENS="2500",
                         SCRIBE_OBSERVE_ON_PAYBACK="false", SCRIBE_COMPRESS_WHEN_COLD="false",
                         SCRIBE_CURATE_NOTES="false", SCRIBE_WATCH_FILES="0")
        for k in range(9):
            ran = run_scribe(["run", *(["-c"] if k else []), "-p", "read-only", "-o", "json", "-"], workspace, env,
                             stdin=paste(k))
            assert ran.code == 0, ran.err
        observer = [r for r in server.requests if side_call_kind(r.json) == "observer"]
    assert observer, "no observation was made"
    events = events_of(session_logs(workspace)[-1])
    usage = [e for e in events if isinstance(e, UsageEvent) and e.purpose == "observer"]
    assert len(usage) == len(observer)
    for row, sent in zip(usage, observer, strict=True):
        assert row.extra["side_call"]["route"] == "cache"
        # the agent's tools, system and messages, then the instruction: no tool and no tool_choice added
        assert "tool_choice" not in sent.json and sent.json["tools"]
        assert sent.json["system"][0]["text"].startswith("You are scribe")
        prompt = sent.usage["input_tokens"] + sent.usage["cache_read_input_tokens"] + sent.usage[
            "cache_creation_input_tokens"]
        assert sent.usage["cache_read_input_tokens"] > 0.7 * prompt, sent.usage  # the stretch came from the cache
        assert sent.usage["cache_creation_input_tokens"] == 0  # and nothing was written for no one to read
        rebuilt = run_scribe(["log", "prompt", "--at", str(row.seq)], workspace, env)
        assert rebuilt.code == 0 and rebuilt.out == canonical_json(sent.json) + "\n"
    assert any(isinstance(e, ObservationEvent) and e.model == "claude-sonnet-5-5" for e in events)


def test_an_observation_after_a_run_reads_the_whole_conversation_from_the_cache(
        workspace: Path, home: Path) -> None:
    # A small window, and a paste each run: each is compressed after its run's answer, through
    # the agent's own request, which the provider has just cached whole (the paste with it).
    model = Model(lambda body: "🔴 the person pasted texts\nCurrent task: reading texts\nNext step: go on")
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MODEL="claude-sonnet-5-5",
                         SCRIBE_OBSERVER_MODEL="claude-sonnet-5-5", SCRIBE_CONTEXT_TOKENS="9000",
                         SCRIBE_OBSERVE_TOKENS="3000", SCRIBE_OBSERVE_ON_PAYBACK="false",
                         SCRIBE_COMPRESS_WHEN_COLD="false", SCRIBE_CURATE_NOTES="false", SCRIBE_WATCH_FILES="0")
        for k in range(6):
            ran = run_scribe(["run", *(["-c"] if k else []), "-p", "read-only", "-o", "json", "-"], workspace, env,
                             stdin=paste(k, lines=150))
            assert ran.code == 0, ran.err
        observer = [r for r in server.requests if side_call_kind(r.json) == "observer"]
        agent = [r for r in server.requests if side_call_kind(r.json) == "agent"]
    events = events_of(session_logs(workspace)[-1])
    usage = [e for e in events if isinstance(e, UsageEvent) and e.purpose == "observer"]
    assert len(usage) == len(observer) >= 3
    for row, sent in zip(usage, observer, strict=True):
        call = row.extra["side_call"]
        assert call["route"] == "cache", call["quote"]
        assert "prefix_to" not in call  # the whole of the agent's last request, its answer after it
        before = [r for r in agent if server.requests.index(r) < server.requests.index(sent)][-1]
        assert sent.json["messages"][:len(before.json["messages"])] == before.json["messages"]
        prompt = sent.usage["input_tokens"] + sent.usage["cache_read_input_tokens"]
        assert sent.usage["cache_read_input_tokens"] > 0.7 * prompt, sent.usage
        rebuilt = run_scribe(["log", "prompt", "--at", str(row.seq)], workspace, env)
        assert rebuilt.code == 0 and rebuilt.out == canonical_json(sent.json) + "\n"
