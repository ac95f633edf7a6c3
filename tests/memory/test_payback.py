"""Observing finished turns once their cache reads have paid for it (the rent-or-buy rule):
the pure rule over synthetic tails, and the agent against the fake API, where it must lower
what the session is billed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from helpers import agent_on
from scribe.agent.protocol import TurnEnded
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import (
    AssistantEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import read_log
from scribe.log.pricing import call_cost
from scribe.memory.observer import OBSERVER_SYSTEM, safe_boundaries
from scribe.memory.payback import (
    KEEP_RAW_TOKENS,
    Rates,
    calls_per_turn,
    calls_since_settled,
    paid_off,
    reflection_paid_off,
    turn_start,
)
from scribe.memory.reflector import REFLECTOR_SYSTEM
from scribe.settings.values import Settings

RATES = Rates.of("claude-sonnet-4-5", "claude-haiku-4-5")


def ev(cls: type[Event], seq: int, **fields: Any) -> Event:
    return cls(seq=seq, ts="t", **fields)  # type: ignore[call-arg]


def turn(seq: int, calls: int, output: str = "x" * 8000) -> list[Event]:
    """A user message, then `calls` model calls; all but the last run a command."""
    events: list[Event] = [ev(UserEvent, seq, text=f"turn at {seq}")]
    for k in range(calls):
        n = seq + len(events)
        last = k == calls - 1
        content = [{"type": "text", "text": "done"}] if last else [
            {"type": "tool_use", "id": f"t{n}", "name": "run_command", "input": {"command": "make"}}]
        events.append(ev(AssistantEvent, n, content=content, stop_reason="end_turn" if last else "tool_use"))
        events.append(ev(UsageEvent, n + 1, purpose="agent", model="m", input=0, cache_read=0, cache_write=0,
                         output=1, latency_ms=1))
        if not last:
            events.append(ev(ToolResultEvent, n + 2, tool_use_id=f"t{n}", tool="run_command", output=output))
    return events


def session_of(turns: list[int]) -> list[Event]:
    """Finished turns with the given numbers of calls, then the next user message (a turn start)."""
    events: list[Event] = []
    for calls in turns:
        events += turn(len(events) + 1, calls)
    return [*events, ev(UserEvent, len(events) + 1, text="next")]


def sizes(events: list[Event], tool_tokens: int = 2000) -> list[int]:
    return [tool_tokens if isinstance(e, ToolResultEvent) else 10 for e in events]


def test_rent_counts_only_the_calls_made_after_a_turn_ended() -> None:
    events = session_of([3, 2])
    calls = calls_since_settled(events)
    second = next(i for i, e in enumerate(events) if isinstance(e, UserEvent) and i > 0)
    assert calls[:second] == [2] * second  # turn 1 was read by the two calls of turn 2
    assert calls[second:] == [0] * (len(events) - second)  # turn 2 has ended, but nothing read it since


def test_a_turn_start_is_a_user_message_no_model_call_has_answered_yet() -> None:
    events = session_of([2])
    assert turn_start(events) == len(events) - 1
    assert turn_start(events[:-1]) is None  # the last turn's calls came after its user message
    assert turn_start([]) is None


def test_nothing_is_observed_until_the_reads_have_paid_for_the_observer_call() -> None:
    quote = None
    calls_in_later_turns = 0
    for later in range(1, 40):  # one finished turn, then more and more later turns of 4 calls
        events = session_of([4] + [4] * later)
        quote = paid_off(events, sizes(events), sizes(events), 600, RATES)
        if quote is not None:
            calls_in_later_turns = 4 * later
            break
        assert later < 39
    assert quote is not None and quote.rent_paid >= quote.price
    assert calls_in_later_turns >= 4  # it took some calls: an observer call is not free


def test_big_outputs_pay_off_sooner_than_small_ones() -> None:
    def calls_needed(tool_tokens: int) -> int:
        for later in range(1, 60):
            events = session_of([4] * (later + 1))
            if paid_off(events, sizes(events, tool_tokens), sizes(events, 200), 600, RATES):
                return later
        return 60
    assert calls_needed(8000) < calls_needed(100)


def test_the_current_turn_stays_raw_the_finished_ones_may_all_go_and_cuts_are_safe() -> None:
    events = session_of([4] * 12)
    quote = paid_off(events, sizes(events), sizes(events), 600, RATES)
    assert quote is not None
    users = [i for i, e in enumerate(events) if isinstance(e, UserEvent)]
    # Through the last finished turn's tool work: keeping it raw would only have it written
    # again. Its final answer ("done", then its usage line) stays, for the next message to answer.
    assert isinstance(events[users[-1] - 2], AssistantEvent) and events[users[-1] - 2].content == [
        {"type": "text", "text": "done"}]
    assert quote.last == users[-1] - 3
    assert quote.last in safe_boundaries(events[: quote.last + 1])
    assert paid_off(events[:-1], sizes(events[:-1]), sizes(events[:-1]), 600, RATES) is None  # not mid-turn


@pytest.mark.parametrize("answer_tokens", [50, 900])
def test_a_plain_exchange_stays_raw_only_while_it_is_short(answer_tokens: int) -> None:
    """A chat: one call per turn, no tools. A short last exchange stays for the next message to
    answer; a long one is rewritten at every observation, so it is observed like the rest."""
    events = session_of([1] * 30)
    tokens = [answer_tokens if isinstance(e, AssistantEvent) else 10 for e in events]
    quote = paid_off(events, tokens, tokens, 600, RATES)
    assert quote is not None
    users = [i for i, e in enumerate(events) if isinstance(e, UserEvent)]
    last_exchange = users[-2]  # the last finished turn: its question, its answer, its usage
    if answer_tokens <= KEEP_RAW_TOKENS:
        assert quote.last == last_exchange - 1
    else:
        assert quote.last == users[-1] - 1


# --- the agent against the fake API ---------------------------------------------------------

class Script:
    """Agent turns: a command with a big output, a file read, an answer. Observer: one line per call."""

    def __init__(self, turns: int, rows: int = 300) -> None:
        self.replies: list[Reply] = []
        for k in range(turns):
            self.replies += [
                Reply([text_block(f"Run {k}."), tool_use_block("run_command", {
                    "command": f"for i in $(seq 1 {rows}); do echo \"run {k} row $i value $((i * 7919))\"; done"})]),
                Reply([tool_use_block("read_file", {"path": "README.md"})]),
                Reply([text_block(f"Run {k} printed 300 rows.")])]

    def __call__(self, request: dict[str, Any]) -> Reply:
        if request["system"][0]["text"] == OBSERVER_SYSTEM:
            return Reply.text("🟡 runs printed 300 rows each\nCurrent task: runs\nNext step: more runs")
        return self.replies.pop(0) if self.replies else Reply.text("done")


def billed(workspace: Path, payback: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[float, list[Event]]:
    turns = 10
    settings = Settings(permission_mode="full-auto", observe_tokens=200_000, observe_on_payback=payback,
                        curate_notes=False, watch_files=False)
    with FakeMessagesServer(Script(turns)) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        session = agent.session
        for k in range(turns):
            assert [e for e in agent.turn(f"do run {k}") if isinstance(e, TurnEnded)][-1].reason == "end_turn"
        session.close()
        assert all(r.status == 200 and r.error is None for r in server.requests)
        cost = sum(call_cost(r.json["model"], input=r.usage["input_tokens"],
                             cache_read=r.usage["cache_read_input_tokens"],
                             cache_write=r.usage["cache_creation_input_tokens"], output=0)
                   for r in server.requests)
    return cost, read_log(session.path).events


def test_observing_paid_off_turns_lowers_the_bill_and_leaves_the_current_turn_raw(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain, plain_events = billed(workspace, False, monkeypatch)
    assert not [e for e in plain_events if isinstance(e, ObservationEvent)]  # far below observe_tokens

    cost, events = billed(workspace, True, monkeypatch)
    observations = [e for e in events if isinstance(e, ObservationEvent)]
    assert observations
    assert cost < plain * 0.9, (cost, plain)
    users = [e.seq for e in events if isinstance(e, UserEvent)]
    for obs in observations:
        before = [e for e in events if e.seq < obs.seq and not isinstance(e, UsageEvent)]
        assert isinstance(before[-1], UserEvent)  # made at a turn start, before its first call
        assert obs.seq_to < before[-1].seq  # the current turn is left raw
    assert any(obs.seq_to > [u for u in users if u < obs.seq][-2] for obs in observations)  # the last one too


def test_a_cold_cache_makes_observing_worth_it_without_rent() -> None:
    """After an idle spell the next call writes the whole prompt anyway: a big finished turn
    is worth observing at once, a small one still is not."""
    events = session_of([2, 1])  # a turn with one big output, then a short exchange (kept raw)
    big = sizes(events, tool_tokens=1000)
    assert paid_off(events, big, sizes(events, 500), 600, RATES) is None  # warm: its rent is too little yet
    quote = paid_off(events, big, sizes(events, 500), 600, RATES, cold=True)
    # the first turn's tool work; the short exchange after it (question and answer) stays raw
    assert quote is not None and quote.last == len(events) - 5
    small = sizes(events, tool_tokens=50)
    assert paid_off(events, small, small, 600, RATES, cold=True) is None


@pytest.mark.parametrize(("idle_minutes", "when_cold"), [(0, True), (10, True), (10, False)])
def test_after_an_idle_spell_a_finished_turn_is_observed_at_once(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, idle_minutes: int, when_cold: bool) -> None:
    settings = Settings(permission_mode="full-auto", observe_tokens=200_000, curate_notes=False, watch_files=False,
                        compress_when_cold=when_cold)
    # Small outputs: warm, a turn's re-reads are far from paying for observing it.
    with FakeMessagesServer(Script(3, rows=20)) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        session = agent.session
        for k in range(2):
            list(agent.turn(f"do run {k}"))
        assert agent.memory is not None
        later = datetime.now(UTC) + timedelta(minutes=idle_minutes)
        agent.memory.sizes.now = lambda: later  # the person comes back after `idle_minutes`
        list(agent.turn("do run 2"))
        session.close()
    observations = [e for e in read_log(session.path).events if isinstance(e, ObservationEvent)]
    # Warm, one turn of rent does not pay for observing it; cold, it does (the next call would
    # write it all again), unless the cold-cache rule is turned off (`compress_when_cold = false`).
    assert len(observations) == (1 if idle_minutes and when_cold else 0)


# --- reflecting when re-reading the observations has paid for it -----------------------------

REFLECT_RATES = Rates.of("claude-sonnet-5-5", "claude-haiku-5-5")


def test_old_chunks_are_condensed_once_their_rereads_pay_and_the_newest_stays() -> None:
    tokens = [400.0] * 6
    assert reflection_paid_off(tokens, [0] * 6, 300, REFLECT_RATES) is None  # nothing re-read yet
    assert reflection_paid_off(tokens, [2, 2, 1, 1, 0, 0], 300, REFLECT_RATES) is None  # too little yet
    n = reflection_paid_off(tokens, [40, 32, 24, 16, 8, 0], 300, REFLECT_RATES)
    assert n is not None and 2 <= n <= 5  # never the newest chunk
    assert reflection_paid_off([400.0, 400.0], [40, 0], 300, REFLECT_RATES) is None  # one chunk alone is not condensed


class ReflectingScript(Script):
    """Observations of 40 lines; the reflector folds them into two."""

    def __call__(self, request: dict[str, Any]) -> Reply:
        system = request["system"][0]["text"]
        if system == OBSERVER_SYSTEM:
            return Reply.text("\n".join(f"🟡 run printed row {i} of many, value noted" for i in range(40))
                              + "\nCurrent task: runs\nNext step: more runs")
        if system == REFLECTOR_SYSTEM:
            return Reply.text("✅ runs printed their rows\nCurrent task: runs\nNext step: more runs")
        return super().__call__(request)


@pytest.mark.parametrize("on", [True, False])
def test_reflection_on_payback_condenses_observations_long_before_reflect_tokens(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    settings = Settings(permission_mode="full-auto", observe_tokens=200_000, curate_notes=False, watch_files=False,
                        reflect_on_payback=on)
    with FakeMessagesServer(ReflectingScript(20)) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        session = agent.session
        for k in range(20):
            assert [e for e in agent.turn(f"do run {k}") if isinstance(e, TurnEnded)][-1].reason == "end_turn"
        session.close()
        assert all(r.status == 200 and r.error is None for r in server.requests)
    events = read_log(session.path).events
    reflections = [e for e in events if isinstance(e, ReflectionEvent)]
    observed = sum(e.tokens for e in events if isinstance(e, ObservationEvent))
    assert observed < settings.reflect_tokens  # the threshold alone would never have reflected
    assert bool(reflections) is on
    for r in reflections:  # each made right after an observation, before the turn's first call
        before = [e for e in events if e.seq < r.seq and not isinstance(e, UsageEvent)]
        assert isinstance(before[-1], ObservationEvent) and before[-1].seq not in r.supersedes


def test_the_turn_that_has_begun_counts_its_expected_reads_as_rent() -> None:
    """Just after one finished turn nothing has re-read it yet, but the turn that has begun is
    about to, call after call: a big output is observed before those calls, not after."""
    events = session_of([4])
    assert calls_per_turn(events[:-1]) == 4
    quote = paid_off(events, sizes(events, 8000), sizes(events, 200), 600, RATES)
    assert quote is not None and quote.last == len(events) - 4  # its tool work; its answer stays
    assert paid_off(events, sizes(events, 100), sizes(events, 200), 600, RATES) is None  # a small one waits
