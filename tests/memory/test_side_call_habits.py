"""Each habit of the catalogue through the real SDK and the fake server: the observer, reflector
and curator accept it (and log only the canonical form) or refuse it, with the reason logged.

One session per habit: three turns observed in that habit, two more observed canonically (so
every session has chunks to reflect), a forced reflection and a curation in that habit. The
canonical habit's session is the reference: a habit that is only dressed differently must leave
exactly the same observations, reflection and notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import agent_on
from scribe.agent.curation.curator import curate
from scribe.agent.protocol import Compressed, TurnEnded
from scribe.agent.session.session import notes_path
from scribe.fakeapi import HABITS, FakeMessagesServer, Reply, SideCallModel
from scribe.log.events import ErrorEvent, NotesEvent, ObservationEvent, ReflectionEvent
from scribe.memory.extract import EXTRACTIVE_MODEL
from scribe.memory.notes import PROVENANCE, entries
from scribe.memory.observations import read_observations
from scribe.settings.values import Settings

SETTINGS = Settings(permission_mode="full-auto", observe_tokens=800, reflect_tokens=500, observe_on_payback=False,
                    watch_files=False)
DRESSED = ("mastra", "bulleted", "decorated", "fenced", "windows", "sectioned", "chatty")
REFUSED = {"prose": ("no tagged observation lines", "no tagged observation lines", "no entry with a source"),
           "refusal": ("stop_reason refusal",) * 3, "empty": ("the answer is empty",) * 3,
           "truncated": ("ran past its budget", "cut at max_tokens", "cut at max_tokens")}


def prompt(k: int) -> str:
    return f"Turn {k}: remember that the constant c{k} is {1000 + 37 * k}. " + " ".join(
        f"w{k}x{i}" for i in range(300))


@dataclass
class Outcome:
    observations: list[ObservationEvent] = field(default_factory=list)  # made by the model in the habit's phase
    stubs: list[ObservationEvent] = field(default_factory=list)  # made without it, its answer unusable
    observe_errors: list[str] = field(default_factory=list)
    reflection: str | None = None
    reflect_errors: list[str] = field(default_factory=list)
    notes: list[tuple[str, str | None]] | None = None
    notes_error: str | None = None


def run_habit(name: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    model = SideCallModel([Reply.text(f"Noted c{k}.") for k in range(5)], habit=name)
    with FakeMessagesServer(model) as server:
        agent = agent_on(server, workspace, SETTINGS, monkeypatch)
        session = agent.session
        for k in range(5):
            if k == 3:  # from here the observer answers canonically: every habit gets chunks to reflect
                model.habits["observer"] = "canonical"
                phase_a = len(session.events)
            ended = [e for e in agent.turn(prompt(k)) if isinstance(e, TurnEnded)]
            assert ended[-1].reason == "end_turn"
        assert agent.memory is not None
        reflected = [e for e in agent.memory.reflect(session, force=True) if isinstance(e, Compressed)]
        curation = curate(session, agent.model, SETTINGS, notes_path(workspace))
        agent.close()
        session.close()
        assert server.errors == [] and all(r.error is None for r in server.requests)
    events = session.events
    outcome = Outcome()
    made = [e for e in events[:phase_a] if isinstance(e, ObservationEvent)]
    outcome.observations = [e for e in made if e.model != EXTRACTIVE_MODEL]
    outcome.stubs = [e for e in made if e.model == EXTRACTIVE_MODEL]
    outcome.observe_errors = [e.message for e in events[:phase_a] if isinstance(e, ErrorEvent)
                              and e.kind == "observe_backoff"]
    # A model-free condensation may stand where the reflector's answers were unusable: it is the
    # fallback, not the model's reflection, and says which observations to recall.
    condensed = [e for e in events if isinstance(e, ReflectionEvent) and e.model == EXTRACTIVE_MODEL]
    assert all("recall seq" in e.text for e in condensed)
    reflections = [e for e in events if isinstance(e, ReflectionEvent) and e.model != EXTRACTIVE_MODEL]
    assert len(reflections) <= 1 and len(reflected) <= 1
    outcome.reflection = reflections[0].text if reflections else None
    outcome.reflect_errors = [p for e in events if isinstance(e, ErrorEvent) and e.kind == "reflect_backoff"
                              for p in e.extra["problems"]]
    notes = [e for e in events if isinstance(e, NotesEvent)]
    if notes:
        assert curation.written
        outcome.notes = [(PROVENANCE.sub("", line)[2:].rstrip(), _source(line, session.id)) for line in entries(notes[0].text)]
    else:
        outcome.notes_error = next(e.message for e in events if isinstance(e, ErrorEvent) and e.kind == "notes")
    for chunk in [e for e in events if isinstance(e, ObservationEvent | ReflectionEvent)]:
        assert read_observations(chunk.text).text == chunk.text  # only the canonical form is logged
    return outcome


def _source(line: str, session_id: str) -> str | None:
    match = PROVENANCE.search(line)
    return match.group(2) if match and match.group(1) == session_id else None


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    from conftest import git

    workspace = tmp_path_factory.mktemp("reference") / "workspace"
    workspace.mkdir()
    git(workspace, "init", "--quiet")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("HOME", str(workspace.parent))
        return run_habit("canonical", workspace, monkeypatch)


def test_the_canonical_habit_observes_reflects_and_curates(reference: Outcome) -> None:
    assert len(reference.observations) >= 2 and not reference.observe_errors
    assert reference.reflection and not reference.reflect_errors
    assert reference.notes and all(source for _, source in reference.notes)


@pytest.mark.parametrize("name", DRESSED)
def test_a_dressed_habit_leaves_what_the_canonical_one_leaves(
        name: str, reference: Outcome, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_habit(name, workspace, monkeypatch)
    assert [o.text for o in outcome.observations] == [o.text for o in reference.observations]
    assert outcome.observe_errors == [] and outcome.reflect_errors == [] and outcome.stubs == []
    assert outcome.reflection == reference.reflection
    assert outcome.notes == reference.notes


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_habit_with_less_or_nothing_is_refused_with_its_reason(
        name: str, reference: Outcome, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_habit(name, workspace, monkeypatch)
    observing, reflecting, curating = REFUSED[name]
    # A truncated answer ran past its budget: refused like any unusable answer, not kept in part.
    assert outcome.observations == [] and outcome.observe_errors
    assert all(observing in message for message in outcome.observe_errors)
    # Each unusable answer to a needed observation left the model-free summary in its place.
    assert len(outcome.stubs) >= len(outcome.observe_errors)
    assert all(f"recall seq {s.seq_from}-{s.seq_to}" in s.text for s in outcome.stubs)
    assert outcome.reflection is None
    assert outcome.reflect_errors and all(reflecting in p for p in outcome.reflect_errors)
    assert outcome.notes is None and outcome.notes_error is not None and curating in outcome.notes_error


def test_the_catalogue_is_covered() -> None:
    assert set(HABITS) == {"canonical", *DRESSED, *REFUSED}


def twenty_turns(name: str, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """A 20-turn tool-heavy session whose observer (and reflector) answer in habit `name`."""
    from scribe.fakeapi import tool_use_block

    script = [reply for k in range(20) for reply in (
        Reply([tool_use_block("run_command", {"command": f"seq -f 'run {k} row %g' 1 300"})]),
        Reply.text(f"Run {k} printed 300 rows."))]
    model = SideCallModel(script, habit=name)
    settings = Settings(permission_mode="full-auto", observe_tokens=3000, reflect_tokens=1500, watch_files=False)
    with FakeMessagesServer(model) as server:
        agent = agent_on(server, workspace, settings, monkeypatch)
        for k in range(20):
            assert [e for e in agent.turn(f"do run {k}") if isinstance(e, TurnEnded)][-1].reason == "end_turn"
        agent.close()
        agent.session.close()
    agent_calls = [r for r in server.requests if r.json["system"][0]["text"].startswith("You are scribe")]
    prompts = [r.usage["input_tokens"] + r.usage["cache_read_input_tokens"] + r.usage["cache_creation_input_tokens"]
               for r in agent_calls]
    events = agent.session.events
    return {"observations": sum(isinstance(e, ObservationEvent) for e in events),
            "reflections": sum(isinstance(e, ReflectionEvent) for e in events),
            "failures": sum(isinstance(e, ErrorEvent) for e in events),
            "largest_prompt": max(prompts), "agent_prompt_tokens": sum(prompts),
            "side_call_input": sum(r.usage["input_tokens"] for r in server.requests if r not in agent_calls),
            "side_call_output": sum(r.usage["output_tokens"] for r in server.requests if r not in agent_calls)}


def test_a_20_turn_session_observed_in_mastra_s_format_compresses_as_the_canonical_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import git

    figures = {}
    for n, name in enumerate(("canonical", "mastra")):
        workspace = tmp_path / f"workspace{n}"  # names of one length: the path is in the instructions
        workspace.mkdir()
        git(workspace, "init", "--quiet")
        figures[name] = twenty_turns(name, workspace, monkeypatch)
        del figures[name]["side_call_output"]  # Mastra's shape is longer to write; what it says is the same
    assert figures["mastra"] == figures["canonical"]
    assert figures["mastra"]["observations"] >= 5 and figures["mastra"]["failures"] == 0
