"""Curation follows what a session taught: a `scribe run -c` chain is curated after each run that
taught something, each time with only what is new, and the next session starts with every fact of
the chain. A session another process is writing is skipped, not waited for, without a word."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import as_a_person, events_of, new_session, session_logs
from scribe.agent.config import SessionChoice
from scribe.agent.curation.background import BackgroundCuration, uncurated
from scribe.cli.app import app
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, side_call_kind
from scribe.log.events import NotesEvent
from scribe.memory.uncurated import needs_curation
from scribe.model.client import ModelClient
from scribe.settings.values import Settings

CHAIN = 15


def fact(k: int) -> str:
    return f"Remember: build step {k} runs tool{k} with flag --level={k * 3}."


@pytest.fixture
def env(home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`scribe` as a person runs it in `workspace`, in this process (the chain is 16 runs: one
    process each would spend most of the test importing the SDK)."""
    as_a_person(monkeypatch, workspace, home, curate_notes=True)
    monkeypatch.setenv("SCRIBE_WATCH_FILES", "0")


def scribe(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.output


def test_a_continue_chain_is_curated_a_fact_at_a_time_and_the_next_session_starts_with_its_facts(
        env: None, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = SideCallModel(lambda request: Reply.text("Noted."))
    with FakeMessagesServer(model) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        scribe("run", fact(0))
        for k in range(1, CHAIN):
            scribe("run", "-c", fact(k))
        scribe("run", "What do you know about the build?")
    # each run taught one fact and was curated after its answer, with that fact alone: what an
    # earlier curation took is never sent again, so the chain costs one small call a run
    curator = [r.json for r in server.requests if side_call_kind(r.json) == "curator"]
    assert len(curator) == CHAIN
    for k, request in enumerate(curator):
        said = str(request["messages"])
        assert fact(k).removeprefix("Remember: ") in said
        assert all(fact(j).removeprefix("Remember: ") not in said.split("said and observed")[-1]
                   for j in range(k))
    opening = [r.json for r in server.requests if side_call_kind(r.json) == "agent"][-1]["system"][0]["text"]
    assert all(fact(k).removeprefix("Remember: ") in opening for k in range(CHAIN))
    logs = [events_of(path) for path in session_logs(workspace)]
    assert len(logs) == 2
    chain_events = next(events for events in logs if any(getattr(e, "text", None) == fact(0) for e in events))
    assert len([e for e in chain_events if isinstance(e, NotesEvent)]) == CHAIN  # each in the session's log
    assert not any(isinstance(e, NotesEvent) for e in logs[1])  # the question taught nothing


def test_a_session_in_use_is_skipped_not_waited_for(env: None, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = SideCallModel(lambda request: Reply.text("Noted."))
    with FakeMessagesServer(model) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("SCRIBE_CURATE_NOTES", "false")  # left uncurated, as a killed finisher leaves it
        scribe("run", fact(1))
        settings = Settings(curate_notes=True, watch_files=False)
        client = ModelClient()
        held = new_session(workspace, settings, SessionChoice(continue_latest=True))  # another writer
        try:
            outcomes = curated(workspace, settings, client)
        finally:
            held.close()
        assert [o.written for o in outcomes] == [False] and "in use by another process" in outcomes[0].message
        assert not outcomes[0].noteworthy  # not a word at a start: it is curated once it ends
        assert model.calls["curator"] == 0 and needs_curation(held.path)
        assert [o.written for o in curated(workspace, settings, client)] == [True]
    assert not needs_curation(held.path)


def curated(workspace: Path, settings: Settings, client: ModelClient) -> list:  # type: ignore[type-arg]
    """What the curation of earlier sessions, as a new session starts it, does."""
    curation = BackgroundCuration(workspace, settings, client, uncurated(workspace, settings)).start()
    assert curation.wait(30)
    return curation.finished()
