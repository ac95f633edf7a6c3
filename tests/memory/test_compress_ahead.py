"""Compression off the person's path: on a slow server the REPL compresses right after a turn,
while the person types, instead of at the start of the next turn's first call; the log keeps one
writer and stays valid; headless runs and Anthropic's API keep compressing at the call."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import events_of, run_scribe, session_logs, wait_for
from repl_driver import person, run_repl  # noqa: F401 - `person` is the REPL tests' environment
from scribe.agent.compression.ahead import SLOW_CALL_MS, works_ahead
from scribe.agent.core import Agent
from scribe.agent.driver import drive
from scribe.agent.opening import AgentConfig, SessionChoice
from scribe.agent.protocol import Compressed, CompressionWait, TurnEnded, UserMessage
from scribe.cli.repl.repl import Repl
from scribe.context.render import canonical_json
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, side_call_kind
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    LeftOutEvent,
    ObservationEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.verify import verify_bytes
from scribe.settings.values import load_settings


def message(k: int) -> str:
    """About 240 tokens: a finished turn fits in the retention floor, three pass the threshold."""
    return f"message {k}: " + " ".join(f"word{k}-{i}" for i in range(100))


def usage(latency_ms: int) -> UsageEvent:
    return UsageEvent(seq=5, ts="t", purpose="agent", model="m", input=1, cache_read=0, cache_write=0, output=1,
                      latency_ms=latency_ms)


def test_auto_works_ahead_for_a_slow_server_that_is_not_anthropics() -> None:
    slow, fast = [usage(SLOW_CALL_MS + 1)], [usage(SLOW_CALL_MS - 1)]
    assert works_ahead("auto", "http://127.0.0.1:8080", slow)
    assert not works_ahead("auto", "http://127.0.0.1:8080", fast)
    assert not works_ahead("auto", "http://127.0.0.1:8080", [])  # nothing measured yet
    assert not works_ahead("auto", "https://api.anthropic.com", slow)
    assert not works_ahead("auto", None, slow)  # the SDK's default: Anthropic's API
    assert works_ahead("always", None, []) and not works_ahead("never", "http://127.0.0.1:1", slow)


def when_observed(events: list[Event]) -> list[str]:
    """For each observation: "between turns" when the last message before it was the model's
    (a turn had ended), "at the call" when it was the person's (the next turn had begun)."""
    said = []
    for n, event in enumerate(events):
        if isinstance(event, ObservationEvent):
            before = next(e for e in reversed(events[:n]) if isinstance(e, UserEvent | AssistantEvent))
            said.append("between turns" if isinstance(before, AssistantEvent) else "at the call")
    return said


@pytest.mark.parametrize(("ahead", "first"), [("always", "between turns"), ("never", "at the call")])
def test_the_repl_compresses_between_turns_when_working_ahead(
        ahead: str, first: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIBE_OBSERVE_AHEAD", ahead)
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "800")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "false")
    model = SideCallModel([Reply.text(f"Noted {k}.") for k in range(6)])
    with FakeMessagesServer(model) as server:
        ran = run_repl(workspace, server, "".join(f"{message(k)}\r" for k in range(6)) + "/stats\r")
        assert all(r.error is None for r in server.requests)
    events = events_of(session_logs(workspace)[0])  # the log reads back whole: one writer throughout
    observed = when_observed(events)
    # Ahead, a tail past 3/4 of the threshold is compressed between turns (one that the next
    # message takes over the threshold from below that still is, at the call); never ahead, all
    # are compressed at the call.
    assert observed and observed[0] == first
    assert ahead == "always" or set(observed) == {"at the call"}
    assert "memory: folded events" in ran.out  # what the thread did is shown, once joined
    assert len([e for e in events if isinstance(e, UserEvent)]) == 6


class HeldSideCalls:
    """A SideCallModel whose observer and reflector answers wait until `release` is set: a
    server whose side calls take long. `agent_while_held` counts agent calls answered meanwhile."""

    def __init__(self, model: SideCallModel) -> None:
        self.model, self.release, self.held = model, threading.Event(), threading.Event()
        self.agent_while_held = 0

    def __call__(self, request: dict) -> object:  # type: ignore[type-arg]
        kind = side_call_kind(request)
        if kind in ("observer", "reflector"):
            self.held.set()
            assert self.release.wait(60), "never released"
        elif self.held.is_set() and not self.release.is_set():
            self.agent_while_held += 1
        return self.model(request)


def five_messages_while_a_side_call_is_held(workspace: Path) -> tuple[HeldSideCalls, FakeMessagesServer, Any]:
    """Five messages in the REPL, the side calls held until a turn has been answered meanwhile
    (a REPL that waited for its compression would never get there); every request valid."""
    held = HeldSideCalls(SideCallModel([Reply.text(f"Noted {k}.") for k in range(8)]))

    def release_after_the_turn() -> None:
        assert wait_for(lambda: held.agent_while_held >= 1, 60)
        held.release.set()

    releaser = threading.Thread(target=release_after_the_turn, daemon=True)
    with FakeMessagesServer(held) as server:
        ran = run_repl(workspace, server, "".join(f"{message(k)}\r" for k in range(5)), during=releaser)
        releaser.join(60)
        assert all(r.error is None for r in server.requests)
    return held, server, ran


def test_nobody_waits_for_a_compression_between_turns_and_the_log_rebuilds_it(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The side call between turns is held until the person's next turn has had its answer: a
    REPL that waited for it (as it once did, "finishing memory compression…") would never get
    there. Once it ends it is taken into the log, which verifies, and `log prompt --at` rebuilds
    its request byte for byte although the session grew while it ran."""
    monkeypatch.setenv("SCRIBE_OBSERVE_AHEAD", "always")
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "800")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    held, server, ran = five_messages_while_a_side_call_is_held(workspace)
    assert held.agent_while_held >= 1  # a turn was answered while the compression waited on its model
    [log] = session_logs(workspace)
    events = events_of(log)
    assert len([e for e in events if isinstance(e, UserEvent)]) == 5
    assert verify_bytes(log.read_bytes()).ok
    grown = [e for e in events if isinstance(e, UsageEvent) and e.purpose == "observer" and "skip" in
             (e.extra.get("side_call") or {})]
    assert grown, "no side call was taken after the session grew"
    sent = {canonical_json(r.json) for r in server.requests if side_call_kind(r.json) == "observer"}
    for usage_event in grown:
        rebuilt = run_scribe(["log", "prompt", "--at", str(usage_event.seq)], workspace, dict(os.environ))
        assert rebuilt.code == 0 and rebuilt.out.strip() in sent, rebuilt.err
    assert "memory: folded events" in ran.out


def test_a_session_that_ends_while_a_compression_waits_says_so_in_its_log(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIBE_OBSERVE_AHEAD", "always")
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "800")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    held = HeldSideCalls(SideCallModel([Reply.text(f"Noted {k}.") for k in range(8)]))
    with FakeMessagesServer(held) as server:
        run_repl(workspace, server, "".join(f"{message(k)}\r" for k in range(4)))  # then Ctrl-D
        assert held.held.is_set()  # the REPL left while the side call was still held
        held.release.set()
    events = events_of(session_logs(workspace)[0])
    [left] = [e for e in events if isinstance(e, ErrorEvent) and e.kind == "compression_left"]
    assert left.seq == events[-1].seq


def test_a_turn_that_passes_the_threshold_is_answered_while_its_compression_waits(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As shipped (`observe_ahead = auto`) on a fast server nothing works ahead between turns, so
    the compression a turn's threshold asks for is due at its call. The REPL starts it in the
    background and the call goes ahead: the observer is held until a turn has been answered
    meanwhile (a REPL that waited for it would never get there). It still observes only what
    came before that turn, and is taken into the log, which rebuilds its request."""
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "800")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "false")
    held, server, ran = five_messages_while_a_side_call_is_held(workspace)
    assert held.agent_while_held >= 1  # answered while the compression waited on its model
    [log] = session_logs(workspace)
    events = events_of(log)
    assert verify_bytes(log.read_bytes()).ok
    [observer] = [e for e in events if isinstance(e, UsageEvent) and e.purpose == "observer"]
    observation = next(e for e in events if isinstance(e, ObservationEvent))
    skip = observer.extra["side_call"].get("skip")
    assert skip  # the session grew while it ran (the turn's answer): it was taken later
    asked_at = max(e.seq for e in events if isinstance(e, UserEvent) and e.seq < skip[0])  # the turn it was due at
    assert observation.seq_to < asked_at  # that turn's own request stayed raw
    sent = {canonical_json(r.json) for r in server.requests if side_call_kind(r.json) == "observer"}
    rebuilt = run_scribe(["log", "prompt", "--at", str(observer.seq)], workspace, dict(os.environ))
    assert rebuilt.code == 0 and rebuilt.out.strip() in sent, rebuilt.err
    assert [e.text for e in events if isinstance(e, UserEvent)] == [message(k) for k in range(5)]
    assert "memory: folded events" in ran.out


class SlowObserver:
    """A SideCallModel behind a one-slot local server: each side call takes `seconds`, as a small
    model writing its answer does; the agent's own answers come from the script at once."""

    def __init__(self, model: SideCallModel, seconds: float) -> None:
        self.model, self.seconds = model, seconds

    def __call__(self, request: dict) -> object:  # type: ignore[type-arg]
        if side_call_kind(request) in ("observer", "reflector"):
            time.sleep(self.seconds)
        return self.model(request)


def long_answer(k: int) -> Reply:
    """What a small model writes to its max_tokens: ~400 tokens of the fake's counting."""
    return Reply.text(f"answer {k}: " + " ".join(f"said{k}-{i}" for i in range(180)))


def small_window_paste(monkeypatch: pytest.MonkeyPatch) -> str:
    """A compression made between turns whenever one is due, and nothing else starting one; and a
    paste that, with a long answer behind it, takes the next request past a 4,096-token window."""
    monkeypatch.setenv("SCRIBE_OBSERVE_AHEAD", "always")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    monkeypatch.setenv("SCRIBE_COMPRESS_WHEN_COLD", "false")
    return "Summarise this.\n" + "\n".join(f"{i}: " + " ".join(f"pasted{i}-{j}" for j in range(18))
                                           for i in range(56))


def test_a_request_a_small_window_cannot_hold_waits_for_the_compression_between_turns(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The daily loop on a 4,096-token local server whose model gets no tools: two short
    messages, a paste that takes the next request past the window, and a question sent while the
    compression that makes room runs. The question waits for it (saying so) and is answered: it
    is never refused for its size and left out, and `log stats` has no turn left out."""
    paste = small_window_paste(monkeypatch)
    monkeypatch.setenv("SCRIBE_MODEL", "smollm2")
    question = "what was the first line about?"
    model = SlowObserver(SideCallModel([long_answer(k) for k in range(4)]), seconds=2.0)
    with FakeMessagesServer(model, kind="llama.cpp", template_tools=False, context_window=4096) as server:
        ran = run_repl(workspace, server, f"hi\rwhat is 2+2?\r\x1b[200~{paste}\x1b[201~\r{question}\r/stats\r")
        refused = [r for r in server.requests if r.status == 400]
        answered = [r for r in server.requests if side_call_kind(r.json) == "agent" and r.status == 200]
    events = events_of(session_logs(workspace)[0])
    assert [e for e in events if isinstance(e, LeftOutEvent)] == [], ran.out
    assert "waiting for the compression running since the last turn" in ran.out
    assert refused == []  # foreseen from the server's counts: nothing was sent that could not fit
    assert answered[-1].json["messages"][-1]["content"][-1]["text"] == question  # answered
    assert "memory could not make room" not in ran.out and "left out" not in ran.out


class HeldOn:
    """Side calls that read `words` held until `release` is set (a compression of them between
    turns still running when the next message comes); the others answered at once."""

    def __init__(self, model: SideCallModel, words: str) -> None:
        self.model, self.words, self.release = model, words, threading.Event()

    def __call__(self, request: dict) -> object:  # type: ignore[type-arg]
        if side_call_kind(request) in ("observer", "reflector") and self.words in json.dumps(request):
            assert self.release.wait(60), "never released"
        return self.model(request)


def test_a_cancel_stops_the_wait_for_the_compression_and_the_turn(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The question that would not fit waits for the compression between turns (its model held);
    a cancel while it waits (Esc in the REPL) ends the wait and the turn at once, the log whole,
    and the compression is taken when it ends."""
    paste = small_window_paste(monkeypatch)
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "false")
    model = HeldOn(SideCallModel([long_answer(k) for k in range(4)]), "pasted0-0")
    with FakeMessagesServer(model, kind="llama.cpp", template_tools=False, context_window=4096) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        settings = load_settings(workspace, {"permission_mode": "ask", "max_retries": 0, "model": "smollm2"})
        agent = Agent(AgentConfig(workspace, SessionChoice(), settings=settings, person=True, answers=True))
        try:
            drive(agent.start(), lambda event: None)
            for said in ("hi", "what is 2+2?"):
                drive(agent.run(UserMessage(said)), lambda event: None)
            drive(agent.run(UserMessage(paste)), lambda event: None)
            assert agent.compressing
            seen: list[object] = []
            for event in agent.run(UserMessage("what was the first line about?")):
                seen.append(event)
                if isinstance(event, CompressionWait):
                    agent.cancel()  # what Esc does
            assert any(isinstance(e, CompressionWait) and e.ahead for e in seen), seen
            assert isinstance(seen[-1], TurnEnded) and seen[-1].reason == "interrupted", seen[-1]
            assert agent.compressing  # the compression goes on: nobody's wait to cancel
            model.release.set()
            assert wait_for(lambda: not agent.compressing, 30)
            taken = agent.take_ahead()
            assert any(isinstance(e, Compressed) for e in taken), taken
        finally:
            model.release.set()
            agent.close()
    events = events_of(session_logs(workspace)[0])
    assert [e for e in events if isinstance(e, LeftOutEvent)] == []
    assert isinstance(events[-1], ErrorEvent) or any(isinstance(e, ObservationEvent) for e in events)
    assert [s for s in server.requests if s.status == 400] == []


def test_the_turn_that_made_a_compression_due_is_compressed_between_turns(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A paste makes a compression due at its own call: started there, in the background, it
    compresses what came before the paste (never the turn's own request). Once the turn has
    ended, that one is taken and the paste itself is compressed between turns, while the person
    reads: it is not left raw until the next message's call."""
    monkeypatch.setenv("SCRIBE_OBSERVE_AHEAD", "always")
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "800")
    monkeypatch.setenv("SCRIBE_RETENTION", "0")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    monkeypatch.setenv("SCRIBE_COMPRESS_WHEN_COLD", "false")
    paste = "Summarise this.\n" + "\n".join(message(k) for k in range(4))
    model = SideCallModel([Reply.text("Noted."), Reply.text("Summarised.")])
    repls: list[Repl] = []

    def answer(request: dict[str, Any]) -> object:
        # The paste's answer comes once the compression its call started has ended: that one
        # ends within the turn, as the docstring's order has it. (One that outlives its turn is
        # taken at the next message, and the turn after it is compressed then.)
        last = request["messages"][-1]["content"]
        said = last if isinstance(last, str) else "".join(b.get("text", "") for b in last if isinstance(b, dict))
        if side_call_kind(request) == "agent" and paste in said:
            assert wait_for(lambda: repls[0].agent.loop.ahead is not None and repls[0].agent.loop.ahead.done, 30)
        return model(request)

    def read_it(repl: Repl) -> bool:
        """The person reads until both compressions have been made (a session that ends at once
        gives one still running a second: agent/compression/ahead.py)."""
        observed = [r for r in server.requests if side_call_kind(r.json) == "observer"]
        return len(observed) >= 2 and not repl.agent.compressing

    with FakeMessagesServer(answer) as server:
        run_repl(workspace, server, f"{message(9)}\r\x1b[200~{paste}\x1b[201~\r", leave_when=read_it,
                 opened=repls.append)
    events = events_of(session_logs(workspace)[0])
    pasted = next(e for e in events if isinstance(e, UserEvent) and e.text == paste)
    covered = [(e.seq_from, e.seq_to) for e in events if isinstance(e, ObservationEvent)]
    assert any(low <= pasted.seq <= high for low, high in covered), covered
