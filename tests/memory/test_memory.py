"""Observational memory: what is observed, what a reflection may replace, and the whole
pipeline against the fake API with scripted observer and reflector answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers import agent_for
from scribe.agent.protocol import Compressed, TurnEnded
from scribe.agent.session.session import Session
from scribe.agent.session.start import open_session, start_session
from scribe.context.preview import OutputView, Settled
from scribe.context.render import prefix_blocks, render
from scribe.context.tokens import TokenEstimator, event_tokens
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import read_log
from scribe.log.store import SessionFile
from scribe.memory.extract import EXTRACTIVE_MODEL
from scribe.memory.observations import read_observations
from scribe.memory.observer import UnusableAnswer, choose_span, safe_boundaries
from scribe.memory.reflector import REFLECTOR_SYSTEM, accept_reflection, plan_reflection
from scribe.settings.values import DEFAULT_OBSERVER_MODEL, Settings
from scribe.tools.registry import builtin_tools, tool_definitions


def ev(cls: type[Event], seq: int, **fields: Any) -> Event:
    return cls(seq=seq, ts="t", **fields)  # type: ignore[call-arg]


def tool_batch(seq: int, ids: list[str]) -> list[Event]:
    content = [{"type": "tool_use", "id": i, "name": "read_file", "input": {}} for i in ids]
    out: list[Event] = [ev(AssistantEvent, seq, content=content, stop_reason="tool_use")]
    out += [ev(ToolResultEvent, seq + 1 + n, tool_use_id=i, tool="read_file", output="x" * 400)
            for n, i in enumerate(ids)]
    return out


# --- pure parts ---------------------------------------------------------------------------

def test_safe_boundaries_never_split_a_call_from_its_result() -> None:
    events = [ev(UserEvent, 0, text="go"), *tool_batch(1, ["a", "b"]), *tool_batch(4, ["c"])]
    assert safe_boundaries(events) == [0, 3, 5]  # after the user, after b's result, after c's


def test_choose_span_keeps_the_retention_floor_and_a_safe_boundary() -> None:
    events = [ev(UserEvent, 0, text="go")]
    for k in range(10):
        events += tool_batch(len(events), [f"t{k}"])
    est = TokenEstimator()
    total = est.total(events)
    span = choose_span(events, est, keep_tokens=total // 3)
    assert span is not None and span.seq_from == 0
    assert isinstance(events[span.seq_to], ToolResultEvent)  # cut after a complete call
    kept = est.total([e for e in events if e.seq > span.seq_to])
    assert kept >= total // 3
    assert choose_span(events, est, keep_tokens=total) is None


def test_an_observation_in_the_raw_tail_does_not_count_toward_the_retention_floor() -> None:
    # A paste that passed the threshold; the observation of what came before it was logged after
    # it, so it sits in the tail; then an answer and a follow-up. The observation is rendered
    # among the chunks, not raw: the floor must be met by the answer and follow-up alone, which
    # are too short, so the paste stays raw (observing it would change the prompt before it).
    observation = ev(ObservationEvent, 2, text="🔴 " + "an observation of earlier turns " * 30,
                     seq_from=0, seq_to=0, tokens=250, model="m")
    events = [ev(UserEvent, 1, text="pasted " * 2000), observation,
              ev(AssistantEvent, 3, content=[{"type": "text", "text": "Noted."}], stop_reason="end_turn"),
              ev(UserEvent, 4, text="And its first word?")]
    est = TokenEstimator()
    assert est.of(observation) == 0
    assert est.total(events) == est.total([e for e in events if e is not observation])
    assert choose_span(events, est, keep_tokens=200) is None


def test_a_settled_output_is_estimated_at_the_size_render_shows_it() -> None:
    outputs = OutputView(6000)
    est = TokenEstimator(outputs, settled_chars=500)
    output = ev(ToolResultEvent, 5, tool_use_id="t", tool="run_command", output="row\n" * 5000)
    assert isinstance(output, ToolResultEvent)
    shown = est.of(output)
    assert shown == event_tokens(output, outputs.text(output))  # its preview, as render shows it
    est.settled_before = 9  # a chunk was made after the turn of seq 5 ended
    settled = est.of(output)
    assert settled == event_tokens(output, outputs.text(output, Settled(9, 500)))
    assert 120 < settled < 250 and shown > 1500, (settled, shown)
    est.settled_before = 5  # seq 5 is in the current turn: shown as before
    assert est.of(output) == shown


def test_answers_without_tagged_lines_are_refused() -> None:
    assert read_observations("```\n🔴 keep me\nCurrent task: x\n```").text == "🔴 keep me\nCurrent task: x"
    with pytest.raises(UnusableAnswer):
        read_observations("   ")
    with pytest.raises(UnusableAnswer):
        read_observations("I could not find anything to observe.")


def test_reflection_plan_condenses_the_oldest_and_refuses_growth() -> None:
    chunks = [ev(ObservationEvent, i, text=f"🔴 fact {i} " + "y" * 400, seq_from=0, seq_to=0, tokens=120,
                 model="h") for i in range(6)]
    assert plan_reflection(chunks, reflect_tokens=10_000) is None
    plan = plan_reflection(chunks, reflect_tokens=500)
    assert plan is not None and plan.condense == chunks[:5] and plan.keep == chunks[5:]
    assert accept_reflection("🔴 facts 0-4", plan) == "🔴 facts 0-4"
    with pytest.raises(UnusableAnswer, match="not smaller"):
        accept_reflection("🔴 " + "z" * 5000, plan)
    with pytest.raises(UnusableAnswer):
        accept_reflection("", plan)


# --- the pipeline against the fake API ----------------------------------------------------

BIG_LINES = 400


def big_output_command(n: int) -> str:
    return f"for i in $(seq 1 {BIG_LINES}); do echo \"run{n} line $i: value=$((i * {n + 7}))\"; done"


class Model:
    """Answers agent calls from a script; observer and reflector calls from callables."""

    def __init__(self, agent: list[Reply], reflect: Callable[[int], str] | None = None) -> None:
        self.agent = list(agent)
        self.reflect = reflect or (lambda attempt: "🔴 condensed: the user wants the numbered runs\n"
                                                   "Current task: runs\nNext step: continue")
        self.reflect_calls = 0
        self.observe_calls = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        system = request["system"][0]["text"]
        if system.startswith("You are the Observer"):
            self.observe_calls += 1
            body = request["messages"][0]["content"][0]["text"]
            first = body.split("Events to observe (seq ")[1].split(")")[0]
            return Reply.text(f"🔴 user asked for numbered runs (events {first})\n"
                              f"🟡 run_command printed {BIG_LINES} lines per run\n"
                              "Current task: the runs\nNext step: keep going")
        if system == REFLECTOR_SYSTEM:
            self.reflect_calls += 1
            return Reply.text(self.reflect(self.reflect_calls))
        return self.agent.pop(0) if self.agent else Reply.text("done")


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Callable[[Model], FakeMessagesServer]:
    servers: list[FakeMessagesServer] = []

    def start(model: Model) -> FakeMessagesServer:
        server = FakeMessagesServer(model)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.start())
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        servers.append(server)
        return server

    yield start  # type: ignore[misc]
    for server in servers:
        server.stop()


def run_turns(workspace: Path, settings: Settings, prompts: list[str], session: Session | None = None) -> Session:
    session = session or start_session(workspace, settings, tool_definitions(builtin_tools()))
    agent = agent_for(workspace, settings, session)
    for prompt in prompts:
        ended = [e for e in agent.turn(prompt) if isinstance(e, TurnEnded)]
        assert ended[-1].reason == "end_turn", ended
    return session


def command_turns(n: int) -> list[Reply]:
    script = []
    for k in range(n):
        script.append(Reply([text_block(f"Run {k}."), tool_use_block("run_command", {"command": big_output_command(k)})]))
        script.append(Reply([text_block(f"Run {k} printed {BIG_LINES} lines.")]))
    return script


SMALL = dict(permission_mode="full-auto", observe_tokens=3000, reflect_tokens=1200, preview_chars=3000)


def test_observer_and_reflector_run_keep_the_cache_prefix_and_the_log_append_only(
        workspace: Path, api: Callable[[Model], FakeMessagesServer]) -> None:
    model = Model(command_turns(8))
    server = api(model)
    # the scripted observations are ~40 tokens each: a low reflect threshold makes a few of them reflect
    settings = Settings(**{**SMALL, "reflect_tokens": 60})  # type: ignore[arg-type]
    session = run_turns(workspace, settings, [f"do run {k}" for k in range(8)])
    session.close()

    events = read_log(session.path).events
    assert [e.seq for e in events] == list(range(len(events)))
    observations = [e for e in events if isinstance(e, ObservationEvent)]
    reflections = [e for e in events if isinstance(e, ReflectionEvent)]
    assert len(observations) >= 2 and reflections, (len(observations), len(reflections))
    assert all(r.status == 200 and r.error is None for r in server.requests)
    purposes = {e.purpose for e in events if isinstance(e, UsageEvent)}
    assert purposes == {"agent", "observer", "reflector"}

    # observed spans are contiguous, start after the previous one, and end at safe boundaries
    for before, after in zip(observations, observations[1:], strict=False):
        assert after.seq_from == before.seq_to + 1
    for obs in observations:
        assert obs.seq_to in {events[i].seq for i in safe_boundaries(events[: obs.seq_to + 1])}

    # around each observation: the request after it keeps the request before it as a prefix up to
    # the older chunks (tools, instructions, earlier observations), and reads that from the cache
    agent_requests = [r for r in server.requests if r.json["system"][0]["text"].startswith("You are scribe")]
    checked = 0
    for earlier, later in zip(agent_requests, agent_requests[1:], strict=False):
        old_system, new_system = earlier.json["system"], later.json["system"]
        if len(new_system) == len(old_system) + 1:  # an observation was appended in between
            shared = len(earlier.json["tools"]) + len(old_system)
            old_blocks = _blocks(earlier.json)[:shared]
            assert _blocks(later.json)[:shared] == old_blocks
            assert later.usage["cache_read_input_tokens"] > 0
            checked += 1
    assert checked >= 1  # the property above was exercised, not skipped


def _blocks(body: dict[str, Any]) -> list[str]:
    from scribe.context.render import Request

    return prefix_blocks(Request(body["model"], body["max_tokens"], body["tools"], body["system"], body["messages"]))


def test_recall_returns_an_elided_detail_exactly_after_compression(
        workspace: Path, api: Callable[[Model], FakeMessagesServer]) -> None:
    script = command_turns(5)
    # after compression, the model asks for run 0's line 200, which no prompt shows any more
    script += [Reply([tool_use_block("recall", {"query": "run0 line 200:"})]), Reply.text("Found it.")]
    model = Model(script)
    server = api(model)
    settings = Settings(**SMALL)  # type: ignore[arg-type]
    session = run_turns(workspace, settings, [f"do run {k}" for k in range(5)] + ["what was run0 line 200?"])
    session.close()
    detail = "run0 line 200: value=1400"
    last_request = server.requests[-1].json
    recall_result = last_request["messages"][-1]["content"][0]["content"]
    assert detail in recall_result
    earlier_prompt = server.requests[-2].json
    assert detail not in str(earlier_prompt)  # gone from the prompt, yet recalled exactly
    events = read_log(session.path).events
    original = next(e for e in events if isinstance(e, ToolResultEvent) and "run0 line 1:" in e.output)
    assert f"[seq {original.seq} tool_result line 200] {detail}" in recall_result


def test_a_reflection_that_does_not_shrink_is_refused_and_backs_off_without_looping(
        workspace: Path, api: Callable[[Model], FakeMessagesServer]) -> None:
    model = Model(command_turns(8), reflect=lambda attempt: "🔴 " + "bloated " * 2000)
    server = api(model)
    settings = Settings(**{**SMALL, "reflect_tokens": 60})  # type: ignore[arg-type]
    session = run_turns(workspace, settings, [f"do run {k}" for k in range(8)])
    session.close()
    events = read_log(session.path).events
    # No reflection of the model's stands (a model-free condensation may take the place of one).
    assert not any(isinstance(e, ReflectionEvent) and e.model != "extractive" for e in events)
    backoffs = [e for e in events if isinstance(e, ErrorEvent) and e.kind == "reflect_backoff"]
    # its budget follows the size asked for, so a bloated answer is stopped there (or refused as larger)
    assert backoffs and ("not smaller" in backoffs[0].message or "cut at max_tokens" in backoffs[0].message)
    # three attempts per backoff, and no new attempt until observations grew past the mark
    assert model.reflect_calls == 3 * len(backoffs)
    assert all(r.error is None for r in server.requests)
    # a retry repeats its attempt's input but for the last line, the size it asks for: a server
    # with a prefix cache evaluates only that line again
    asked = [r.json["messages"][0]["content"][0]["text"] for r in server.requests
             if r.json["system"][0]["text"] == REFLECTOR_SYSTEM]
    for first in range(0, len(asked), 3):
        attempts = [text.rsplit("\n", 1) for text in asked[first:first + 3]]
        assert len(attempts) == 3 and len({body for body, _ in attempts}) == 1, attempts
        assert "user asked for numbered runs" in attempts[0][0]  # the observations condensed
        assert all(size.startswith("Condense the observations above to at most about") for _, size in attempts)


def test_empty_observer_answer_is_not_kept_and_a_model_free_summary_takes_its_place(
        workspace: Path, api: Callable[[Model], FakeMessagesServer], monkeypatch: pytest.MonkeyPatch) -> None:
    model = Model(command_turns(5))
    real = model.__call__

    def empty_observer(request: dict[str, Any]) -> Reply:
        if request["system"][0]["text"].startswith("You are the Observer"):
            model.observe_calls += 1
            return Reply.text("Nothing notable.")
        return real(request)

    api(empty_observer)  # type: ignore[arg-type]
    session = run_turns(workspace, Settings(**SMALL), [f"do run {k}" for k in range(5)])  # type: ignore[arg-type]
    session.close()
    events = read_log(session.path).events
    observations = [e for e in events if isinstance(e, ObservationEvent)]
    assert observations and all(e.model == EXTRACTIVE_MODEL for e in observations)  # the answer is never kept
    assert not any("Nothing notable" in e.text for e in observations)
    failures = [e for e in events if isinstance(e, ErrorEvent) and e.kind == "observe_backoff"]
    assert failures and model.observe_calls == len(failures)


def test_compression_survives_a_restart_and_render_matches_the_server(
        workspace: Path, api: Callable[[Model], FakeMessagesServer]) -> None:
    model = Model(command_turns(6))
    server = api(model)
    settings = Settings(**SMALL)  # type: ignore[arg-type]
    session = run_turns(workspace, settings, [f"do run {k}" for k in range(3)])
    session.close()
    session = open_session(SessionFile(session.id, session.path, None, None))
    session = run_turns(workspace, settings, [f"do run {k}" for k in range(3, 6)], session)
    session.close()
    events = read_log(session.path).events
    agent_calls = [i for i, e in enumerate(events) if isinstance(e, AssistantEvent)]
    agent_requests = [r.json for r in server.requests if r.json["system"][0]["text"].startswith("You are scribe")]
    assert len(agent_requests) == len(agent_calls)
    for index, body in zip(agent_calls, agent_requests, strict=True):
        assert render(events[:index]).body() == {**body}
    assert any(isinstance(e, ObservationEvent) for e in events)


def test_compress_now_observes_and_reflects_on_demand(
        workspace: Path, api: Callable[[Model], FakeMessagesServer]) -> None:
    model = Model(command_turns(2))
    api(model)
    settings = Settings(**SMALL)  # type: ignore[arg-type]
    session = run_turns(workspace, settings, [f"do run {k}" for k in range(2)])
    assert not any(isinstance(e, ObservationEvent) for e in session.events)  # under the threshold
    agent = agent_for(workspace, settings, session)
    assert agent.memory is not None
    before = agent.memory.context(session)
    done = [e for e in agent.memory.compress_now(session) if isinstance(e, Compressed)]
    after = agent.memory.context(session)
    session.close()
    assert [d.kind for d in done] == ["observation"]  # one chunk: nothing to reflect yet
    assert after.raw < before.raw and after.observations > 0


def test_scribe_reflect_from_the_shell_with_thresholds_from_the_environment(workspace: Path, tmp_path: Path) -> None:
    from helpers import run_scribe, scribe_env, session_logs

    model = Model(command_turns(3))
    with FakeMessagesServer(model) as server:
        # The observer named: on a server that is not Anthropic's host the default is the agent's
        # model, whose cached prefix this Model does not answer observer calls through.
        # The runs' observe_tokens above what they leave, so nothing is compressed after them;
        # `scribe reflect` then runs with a lower one from its environment.
        env = scribe_env(server.base_url, tmp_path, SCRIBE_OBSERVE_TOKENS="20000", SCRIBE_REFLECT_TOKENS="50000",
                         SCRIBE_PREVIEW_CHARS="3000", SCRIBE_OBSERVER_MODEL=DEFAULT_OBSERVER_MODEL)
        for k in range(2):
            args = ["run", "-p", "full-auto", f"do run {k}"]
            assert run_scribe(args if k == 0 else ["run", "-c", *args[1:]], workspace, env).code == 0
        assert model.observe_calls == 0
        ran = run_scribe(["reflect"], workspace, {**env, "SCRIBE_OBSERVE_TOKENS": "2000"})
    assert ran.code == 0, ran.err
    assert model.observe_calls == 1
    assert "observation: events 1-" in ran.out and "-> raw" in ran.out
    events = read_log(session_logs(workspace)[0]).events
    assert isinstance(events[-1], ObservationEvent)
    assert all(r.error is None for r in server.requests)
