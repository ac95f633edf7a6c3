"""Memory across sessions: project instructions in the system prefix, and curated project notes
that carry a fact into the next session and replace it when a later session contradicts it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.context.tokens import estimate_text
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import NotesEvent, SessionEvent, UsageEvent, UserEvent
from scribe.memory.notes import CURATOR_SYSTEM, NotesRefused, accept_notes, sources

CURATOR_START = CURATOR_SYSTEM.split("{")[0][:40]
FACT = re.compile(r"^\[([\w-]+#\d+)\] (.*)$")


class Model:
    """Agent calls answer briefly; the curator keeps what is said about tests, and a newer
    statement about how tests run replaces the older one."""

    def __init__(self) -> None:
        self.curations = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        system = request["system"][0]["text"] if isinstance(request["system"], list) else request["system"]
        if not system.startswith(CURATOR_START):
            return Reply.text("Noted.")
        self.curations += 1
        body = request["messages"][0]["content"][0]["text"]
        existing = [line for line in body.split("\n\nWhat session")[0].splitlines() if line.startswith("- ")]
        new = []
        for line in body.splitlines():
            match = FACT.match(line)
            if match and "test" in match.group(2).lower():
                new.append(f"- {match.group(2)} [from {match.group(1)}]")
        if new:  # the newest statement about tests wins
            existing = [e for e in existing if "test" not in e.lower()] + new[-1:]
        return Reply.text("## Conventions\n" + "\n".join(existing or ["- (nothing yet) [from x#0]"]))


def agent_requests(server: FakeMessagesServer) -> list[dict[str, Any]]:
    return [r.json for r in server.requests if not r.json["system"][0]["text"].startswith(CURATOR_START)]


def test_a_fact_reaches_the_next_session_and_a_contradiction_replaces_it(workspace: Path, home: Path) -> None:
    (workspace / "AGENTS.md").write_text("Use tabs for indentation.\n")
    model = Model()
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true")
        first = run_scribe(["run", "Our tests run with `make check`, please remember that."], workspace, env)
        assert first.code == 0, first.err
        # it taught something: curated after its answer (before it exits, in tests)
        notes_file = workspace / ".scribe" / "notes.md"
        assert "`make check`" in notes_file.read_text() and model.curations == 1
        assert "notes: 1 entry in" in first.err

        second = run_scribe(["run", "What do you know about this project?"], workspace, env)
        assert second.code == 0, second.err
        assert second.err == ""  # it taught nothing: no curation after it
        opening = agent_requests(server)[1]["system"][0]["text"]
        assert "Use tabs for indentation." in opening and "`make check`" in opening

        third = run_scribe(["run", "We switched: tests now run with `tox -e py311`."], workspace, env)
        assert third.code == 0, third.err
        fourth = run_scribe(["run", "Hello again."], workspace, env)
        assert fourth.code == 0
        notes = notes_file.read_text()
        assert "`tox -e py311`" in notes and "make check" not in notes
        opening = agent_requests(server)[3]["system"][0]["text"]
        assert "`tox -e py311`" in opening and "make check" not in opening
        assert model.curations == 2  # sessions one and three, each once
    assert all(r.error is None for r in server.requests)

    # provenance: every entry names the session and seq of the words it came from
    logs = {p.stem: events_of(p) for p in session_logs(workspace)}
    for session_id, seq in sources(notes):
        said = next(e for e in logs[session_id] if e.seq == seq)
        assert isinstance(said, UserEvent) and "tox -e py311" in said.text
    # the log records each curation: its text, its model call
    third_log = next(events for events in logs.values() if any(
        isinstance(e, UserEvent) and "switched" in e.text for e in events))
    curated = [e for e in third_log if isinstance(e, NotesEvent)]
    assert len(curated) == 1 and curated[0].text == notes and curated[0].before is not None
    assert any(isinstance(e, UsageEvent) and e.purpose == "curator" for e in third_log)
    header = logs[session_logs(workspace)[0].stem][0]
    assert isinstance(header, SessionEvent)
    assert [Path(s["path"]).name for s in header.sources] == ["AGENTS.md"]


def test_instructions_and_notes_stay_byte_stable_through_a_session(workspace: Path, home: Path) -> None:
    (workspace / "CLAUDE.md").write_text("Prefer small commits.\n")
    with FakeMessagesServer(Model()) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true")
        assert run_scribe(["run", "Run tests with `pytest -q`."], workspace, env).code == 0
        # notes were just curated and CLAUDE.md edited: the session keeps what it began with
        (workspace / "CLAUDE.md").write_text("Prefer huge commits.\n")
        assert run_scribe(["run", "-c", "and lint with ruff"], workspace, env).code == 0
    first, second = agent_requests(server)
    assert first["system"][0] == second["system"][0]
    assert "Prefer small commits." in first["system"][0]["text"]
    assert "pytest -q" not in first["system"][0]["text"]  # the notes came after this session began
    assert second["messages"][0] == first["messages"][0]
    continued = [r for r in server.requests if r.json is second][0]
    assert continued.usage["cache_read_input_tokens"] > 0  # the recorded prefix is still cached


def test_nothing_new_means_no_curation_call(workspace: Path, home: Path) -> None:
    model = Model()
    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true", SCRIBE_HOUSEKEEPING="inline")
        assert run_scribe(["run", "Tests: `make check`."], workspace, env).code == 0
        assert model.curations == 0  # nothing in it is said to last
        assert run_scribe(["notes", "curate"], workspace, env).code == 0  # on demand: whatever was said
        assert model.curations == 1
        ran = run_scribe(["notes", "curate"], workspace, env)
        assert ran.code == 0 and "nothing new" in ran.out
        assert run_scribe(["run", "-c", "Remember that."], workspace, env).code == 0
        assert model.curations == 2  # something new, said to last
        assert run_scribe(["run", "Hello."], workspace, env).code == 0
    assert model.curations == 2
    assert len(server.requests) == 5


def test_curated_answers_are_checked() -> None:
    answer = ("Sure, here you go:\n## Conventions\n- tabs [from s1#3]\n- no source here\n"
              + "\n".join(f"- fact {i} {'x' * 60} [from s1#{i}]" for i in range(200)))
    notes = accept_notes(answer, budget=300)
    assert "no source here" not in notes.text and notes.dropped == ["- no source here"]
    assert "Sure, here you go" not in notes.text
    assert estimate_text(notes.text) <= 300 + estimate_text("# Project notes\n\nCurated by scribe") + 30
    assert notes.text.count("[from s1#") == notes.entries and notes.entries < 200
    assert sources(notes.text)[0] == ("s1", 3)
    with pytest.raises(NotesRefused):
        accept_notes("I have no notes to add.", budget=300)


def test_sources_must_be_real_and_hand_written_lines_survive() -> None:
    current = "# Project notes\n\n- Deploys go to staging-2 [from old#4]\n- Always use tabs\n"
    answer = ("- Deploys go to staging-2 [from old#4]\n- Always use tabs\n- Tests: make check [from new#2]\n"
              "- Invented fact [from nowhere#9]\n- Another unsourced claim\n")
    notes = accept_notes(answer, budget=500, current=current, session_id="new")
    assert "staging-2" in notes.text and "Always use tabs" in notes.text and "make check" in notes.text
    assert notes.dropped == ["- Invented fact [from nowhere#9]", "- Another unsourced claim"]
