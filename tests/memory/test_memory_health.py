"""Memory health people can see: how many observations, reflections and curations were made and
how many side calls failed, with the last reason, in `/stats`, `scribe log stats` and
`scribe run --output json`; and the REPL says once, plainly, when compression is not working."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import agent_on, events_of, run_scribe, scribe_env, session_logs
from repl_driver import person, run_repl  # noqa: F401 - `person` is the REPL tests' environment
from scribe.agent.protocol import Notice
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, tool_use_block
from scribe.log.events import AssistantEvent, ErrorEvent, ObservationEvent, ReflectionEvent
from scribe.log.health import memory_health
from scribe.memory.extract import EXTRACTIVE_MODEL
from scribe.settings.values import Settings

STALLED = "observer answers refused 3 times in a row"


def big(k: int) -> str:
    return f"message {k}: " + " ".join(f"word{k}-{i}" for i in range(320))


def test_the_agent_says_once_when_observer_answers_keep_being_refused(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(permission_mode="full-auto", observe_tokens=800, observe_on_payback=False, watch_files=False)
    model = SideCallModel(lambda request: Reply.text("Noted."), observer="prose")
    with FakeMessagesServer(model) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        notices = [e.text for k in range(16) for e in agent.turn(big(k)) if isinstance(e, Notice)]
        agent.close()
        agent.session.close()
    failures = [e for e in agent.session.events if isinstance(e, ErrorEvent) and e.kind == "observe_backoff"]
    assert len(failures) >= 4  # compression kept failing past the third refusal...
    stalled = [n for n in notices if STALLED in n]
    assert len(stalled) == 1  # ...and the person was told once, with the reason and the size
    assert "the answer has no tagged observation lines" in stalled[0] and "the prompt is now ~" in stalled[0]
    assert "kept in bounds by model-free summaries" in stalled[0]  # each refusal left one in its place
    health = memory_health(agent.session.events)
    assert health.observer.made == 0 and health.observer.failed == len(failures)
    assert health.model_free >= len(failures)
    assert health.last_failure == failures[-1].message


def test_stats_show_what_memory_made_and_what_failed(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = "".join(f"{big(k)}\r" for k in range(8)) + "/stats\r"
    model = SideCallModel([Reply.text(f"Noted {k}.") for k in range(8)], observer="prose")
    monkeypatch.setenv("SCRIBE_OBSERVE_TOKENS", "800")
    monkeypatch.setenv("SCRIBE_OBSERVE_ON_PAYBACK", "false")
    with FakeMessagesServer(model) as server:
        ran = run_repl(workspace, server, keys)
    out = " ".join(ran.out.split())
    assert out.count(STALLED) == 1
    failed = model.calls["observer"]
    assert failed >= 3
    summaries = re.search(r"memory by a model 0 observations, 0 reflections, 0 curations; without a model "
                          r"(\d+) summaries; ", out)
    assert summaries and int(summaries.group(1)) >= failed  # every refused answer left a summary in its place
    assert (f" summaries; {failed} side calls failed ({failed} observer), "
            "last: observation failed: the answer has no tagged observation lines") in out


@pytest.mark.slow
def test_log_stats_and_run_json_count_observations_reflections_and_failures(workspace: Path, home: Path) -> None:
    agent = [reply for _ in range(3) for reply in (
        *(Reply([tool_use_block("run_command", {"command": f"seq {n} 3000"})]) for n in range(1, 4)),
        Reply.text("Counted."))]
    model = SideCallModel(agent)
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_OBSERVE_TOKENS="1500", SCRIBE_REFLECT_TOKENS="500",
                         SCRIBE_OBSERVE_ON_PAYBACK="false", SCRIBE_WATCH_FILES="0")
        for k in range(2):  # observed as asked
            ran = run_scribe(["run", *(["-c"] if k else []), "-p", "full-auto", big(k)], workspace, env)
            assert ran.code == 0, ran.err
        assert run_scribe(["reflect"], workspace, env).code == 0  # reflected as asked
        model.habits.update(observer="empty", reflector="refusal")
        ran = run_scribe(["run", "-c", "-p", "full-auto", "-o", "json", big(9)], workspace, env)
        assert ran.code == 0, ran.out
        after_run = run_scribe(["log", "stats", "--json"], workspace, env).json()["memory"]
        assert run_scribe(["reflect"], workspace, env).code == 0  # refused three times
        stats = run_scribe(["log", "stats", "--json"], workspace, env).json()["memory"]
        text = " ".join(run_scribe(["log", "stats"], workspace, env).out.split())
    events = events_of(session_logs(workspace)[0])
    # the JSON says memory as the answer was written; the compression after it came later
    answered = max(e.seq for e in events if isinstance(e, AssistantEvent))
    assert ran.json()["memory"] == memory_health([e for e in events if e.seq <= answered]).as_dict()
    assert after_run["failed"] >= 1 and after_run["by_purpose"]["observer"]["last_failure"] == (
        "observation failed: the answer is empty")
    observations = sum(isinstance(e, ObservationEvent) and e.model != EXTRACTIVE_MODEL for e in events)
    model_free = sum(isinstance(e, ObservationEvent | ReflectionEvent) and e.model == EXTRACTIVE_MODEL for e in events)
    reflections = sum(isinstance(e, ReflectionEvent) and e.model != EXTRACTIVE_MODEL for e in events)
    assert observations >= 2 and reflections == 1 and model_free >= 1  # the empty answers left summaries
    assert (stats["observations"], stats["reflections"], stats["curations"]) == (observations, reflections, 0)
    assert stats["model_free"] == model_free
    failed_calls = model.calls["observer"] + model.calls["reflector"] - observations - reflections
    # Three tries per refused reflection: `scribe reflect`'s, and one in the run when its model-free
    # summaries took the observations past reflect_tokens.
    backoffs = sum(isinstance(e, ErrorEvent) and e.kind == "reflect_backoff" for e in events)
    reflector_failed = 3 * backoffs
    assert stats["failed"] == failed_calls and stats["by_purpose"]["reflector"]["failed"] == reflector_failed >= 3
    last = [e for e in events if isinstance(e, ErrorEvent)][-1]
    assert stats["last_failure"] == last.message and "stop_reason refusal" in last.message
    summaries = f"{model_free} summar{'y' if model_free == 1 else 'ies'}"
    assert (f"memory: by a model {observations} observations, 1 reflection, 0 curations; without a model {summaries}; "
            f"{failed_calls} side calls failed "
            f"({failed_calls - reflector_failed} observer, {reflector_failed} reflector), last: {last.message}") in text
    # the compression lines count the same chunks: what models made and what was made without one
    observed = observations + sum(isinstance(e, ObservationEvent) and e.model == EXTRACTIVE_MODEL for e in events)
    assert f"compression: {observed} observations ({observed - observations} of them model-free) stand for" in text
