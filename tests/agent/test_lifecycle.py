"""One session life cycle for both front ends: `scribe run` and the REPL start, continue, pin MCP
tools and greet through the one opening (agent/opening.py), and each says what the same
events tell it. Both run in this process, so the assembly can be watched: a front end that
started a session its own way would show up here as a different event sequence."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from typer.testing import CliRunner

from helpers import as_a_person, events_of, new_session, trust_here
from mcp_servers.launch import notes_table
from scribe.agent import opening
from scribe.agent.protocol import Curated, ServersStarting, ServersWaited, SessionOpened
from scribe.cli.app import app
from scribe.cli.repl.repl import start
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel
from scribe.log.events import UserEvent
from scribe.settings.values import Settings, load_settings

CTRL_D = "\x04"
LIFE = (Curated, ServersStarting, ServersWaited, SessionOpened)


@pytest.fixture
def driven(monkeypatch: pytest.MonkeyPatch, workspace: Path, home: Path) -> Iterator[list[object]]:
    """A person in `workspace`, whose notes are curated and whose one MCP server fails as it
    starts; and every event the assembly hands a front end to show as it opens a session."""
    as_a_person(monkeypatch, workspace, home, curate_notes=True)
    monkeypatch.setenv("SCRIBE_WATCH_FILES", "0")
    monkeypatch.setenv("COLUMNS", "400")  # the REPL's lines unwrapped, to be found whole
    config = workspace / ".scribe" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(notes_table(NOTES_MODE="fail"))
    trust_here(workspace)
    seen: list[object] = []
    real = opening.Opened.open

    def watched(self: opening.Opened, choice: opening.SessionChoice) -> Generator[object, object, object]:
        events = real(self, choice)
        answer: object = None
        while True:
            try:
                event = events.send(answer)
            except StopIteration as done:
                return done.value
            seen.append(event)
            answer = yield event

    monkeypatch.setattr(opening.Opened, "open", watched)
    yield seen


def scribe_run(*args: str) -> str:
    ran = CliRunner().invoke(app, ["run", *args])
    assert ran.exit_code == 0, (ran.output, ran.exception)
    return ran.stderr


def repl(capsys: pytest.CaptureFixture[str], *, continue_: bool) -> str:
    """The REPL opened and left at once (Ctrl-D); what it printed."""
    capsys.readouterr()
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(CTRL_D)
        start(continue_=continue_, resume=None, permission_mode=None, model=None)
    # The curation it started when its prompt was drawn ends with the process (a daemon thread);
    # in this process, it is waited for, as the next `scribe` would find it ended.
    for thread in threading.enumerate():
        if thread.name == "scribe-curation":
            thread.join(30)
    return capsys.readouterr().out


def taken(seen: list[object]) -> list[object]:
    """The life-cycle events seen so far, up to the greeting (the start), taken off `seen`."""
    life = [e for e in seen if isinstance(e, LIFE)]
    del seen[:]
    opened = next(i for i, e in enumerate(life) if isinstance(e, SessionOpened))
    return life[:opened + 1]


def shape(event: object) -> tuple[object, ...]:
    """What an event says, without what differs by session (its id, its permission mode)."""
    if isinstance(event, SessionOpened):
        return ("opened", event.resumed, event.problems, event.notices, event.mcp)
    if isinstance(event, Curated):
        return ("curated", event.noteworthy)
    return (type(event).__name__, *vars(event).values())


def test_run_and_the_repl_start_and_continue_a_session_through_the_one_assembly(
        driven: list[object], workspace: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    earlier = new_session(workspace, load_settings(workspace, {}))
    earlier.append(UserEvent, text="Remember: the tests run with make check.")
    earlier.close()
    del driven[:]  # what opening the earlier session showed
    with FakeMessagesServer(SideCallModel(lambda request: Reply.text("Done."))) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        run_said = scribe_run("Remember: releases are tagged by hand.")
        by_run = taken(driven)
        repl_said = repl(capsys, continue_=False)
        by_repl = taken(driven)
        run_again = scribe_run("-c", "and again")
        continued_by_run = taken(driven)
        repl_again = repl(capsys, continue_=True)
        continued_by_repl = taken(driven)

    # a new session: the servers waited for, the greeting; nothing curated on the way (a run's
    # sessions are curated after it, the REPL's earlier ones in the background)
    assert [type(e) for e in by_run] == [ServersStarting, ServersWaited, SessionOpened]
    assert [shape(e) for e in by_run] == [shape(e) for e in by_repl]
    assert by_run[0] == ServersStarting(("notes",), Settings().mcp_start_timeout_s)
    run_opened, repl_opened = by_run[-1], by_repl[-1]
    assert isinstance(run_opened, SessionOpened) and isinstance(repl_opened, SessionOpened)
    assert not run_opened.resumed and run_opened.mcp and run_opened.mcp[0].startswith("mcp: server 'notes' failed")
    # each front end says what the events told it
    assert f"scribe: {run_opened.mcp[0]}" in run_said and repl_opened.mcp[0] in repl_said
    assert f"new session {repl_opened.session_id}" in repl_said
    # the run curated its session and the earlier one after its answer (before it exited, as
    # housekeeping = "inline" has it), so the REPL's new session began with both facts
    assert "scribe: before exiting: curating the notes" in run_said
    assert "make check" not in events_of(run_opened.path)[0].system
    began_with = events_of(repl_opened.path)[0].system
    assert "make check" in began_with and "tagged by hand" in began_with

    # continuing: no curation and no wait, the same session greeted as continued
    assert [shape(e) for e in continued_by_run] == [shape(e) for e in continued_by_repl] == [
        ("opened", True, (), (), ())]
    run_continued, repl_continued = continued_by_run[0], continued_by_repl[0]
    assert isinstance(run_continued, SessionOpened) and isinstance(repl_continued, SessionOpened)
    assert run_continued.session_id == repl_continued.session_id == run_opened.session_id
    assert "scribe: " not in run_again  # "and again" teaches nothing: nothing to do after it
    assert f"continuing session {run_opened.session_id}" in repl_again
