"""Compression off the person's path: on a slow server the REPL compresses right after a turn,
while the person types, instead of at the start of the next turn's first call; the log keeps one
writer and stays valid; headless runs and Anthropic's API keep compressing at the call."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import events_of, session_logs
from repl_driver import person, run_repl  # noqa: F401 - `person` is the REPL tests' environment
from scribe.agent.ahead import SLOW_CALL_MS, works_ahead
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel
from scribe.log.events import AssistantEvent, Event, ObservationEvent, UsageEvent, UserEvent


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
    assert "memory: observation of events" in ran.out  # what the thread did is shown, once joined
    assert len([e for e in events if isinstance(e, UserEvent)]) == 6
