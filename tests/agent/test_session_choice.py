"""Which session `-c` opens: the one with the latest activity that can be continued. A session
holding only its start (as `/clear` or a failed start leaves it) is not activity; a damaged
newer one is passed over and named; the REPL's exit line names what `-c` will open."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from conftest import CORRUPT_ON_PURPOSE
from helpers import events_of, run_scribe, scribe_env, session_logs
from repl_driver import open_repl
from scribe.agent.config import SessionChoice
from scribe.cli.repl.view import View
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import UserEvent
from scribe.settings.values import load_settings

NO_API = "http://127.0.0.1:9"


def users(log: Path) -> list[str]:
    return [e.text for e in events_of(log) if isinstance(e, UserEvent)]


def log_with(workspace: Path, text: str) -> Path:
    return next(p for p in session_logs(workspace) if text in users(p))


def test_continue_picks_the_session_used_last_not_the_one_created_last(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "one"], workspace, env).code == 0
        assert run_scribe(["run", "two"], workspace, env).code == 0
        first = log_with(workspace, "one")
        assert run_scribe(["run", "--session", first.stem, "three"], workspace, env).code == 0
        assert run_scribe(["run", "-c", "four"], workspace, env).code == 0
    assert users(first) == ["one", "three", "four"]
    assert users(log_with(workspace, "two")) == ["two"]


def test_a_failed_start_leaves_no_session_for_continue_to_pick(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "the real work"], workspace, env).code == 0
        no_key = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
        assert run_scribe(["run", "again"], workspace, no_key).code == 2
        assert run_scribe(["run", "again"], workspace, {**env, "ANTHROPIC_BASE_URL": "notaurl"}).code == 2
        assert len(session_logs(workspace)) == 1
        assert run_scribe(["run", "-c", "continued"], workspace, env).code == 0
    assert users(session_logs(workspace)[0]) == ["the real work", "continued"]


def repl_session(workspace: Path, keys: str, choice: SessionChoice | None = None) -> str:
    """A REPL in this process typing `keys`, then leaving (Ctrl-D); what it printed."""
    out = io.StringIO()
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(keys + "\x04")
        settings = load_settings(workspace, {"permission_mode": "ask", "curate_notes": False})
        with open_repl(workspace, settings, View(Console(file=out, width=200)), choice) as repl:
            repl.loop()
    return out.getvalue()


def test_after_clear_and_resume_the_exit_line_and_continue_agree(workspace: Path, home: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.startswith(("SCRIBE_", "ANTHROPIC_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.chdir(workspace)
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        repl_session(workspace, "the old work\r")
        old = session_logs(workspace)[0]
        # A new session, then straight back to the old one: the new one stays empty.
        out = repl_session(workspace, f"/clear\r/resume {old.stem}\r")
        assert f"session {old.stem} saved; `scribe -c` continues it" in out, out
        assert len(session_logs(workspace)) == 3  # the REPL's own new session and /clear's, both empty
        # Leaving a session where nothing happened names the one `-c` will open instead.
        out = repl_session(workspace, "")
        empty = max(session_logs(workspace), key=lambda p: p.stat().st_mtime)
        assert f"session {empty.stem} had nothing in it; `scribe -c` continues {old.stem}" in out, out
        ran = run_scribe(["run", "-c", "and on"], workspace, scribe_env(server.base_url, home))
        assert ran.code == 0, ran.err
    assert users(old) == ["the old work", "and on"]


def test_a_damaged_newest_session_is_listed_as_damaged_and_continue_says_it_skipped_it(
        workspace: Path, home: Path) -> None:
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "good one"], workspace, env).code == 0
        [good] = session_logs(workspace)
        (good.parent / CORRUPT_ON_PURPOSE).touch()
        garbage = good.parent / "29990101-000000-abcdef.jsonl"
        garbage.write_bytes(b"\x00\x01 not a log at all\n" * 50)

        listed = run_scribe(["log", "list", "--json"], workspace, env)
        assert listed.code == 0, listed.err
        rows = {r["id"]: r for r in listed.json()}
        assert rows[good.stem]["damaged"] is None
        assert rows[garbage.stem]["damaged"] == "cannot be continued: its first line is not a JSON object"
        table = run_scribe(["log", "list"], workspace, env)
        assert garbage.stem in table.out and "cannot be continued" in table.out

        ran = run_scribe(["run", "-c", "go on"], workspace, env)
        assert ran.code == 0, ran.err
        assert (f"scribe: note: skipped session {garbage.stem}, written after this one: its first line is "
                f"not a JSON object; `scribe log verify {garbage.stem}` says more") in ran.err
    assert users(good) == ["good one", "go on"]
    assert garbage.read_bytes() == b"\x00\x01 not a log at all\n" * 50


def test_a_state_folder_of_nothing_but_garbage_is_not_no_sessions_yet(workspace: Path, home: Path) -> None:
    sessions = workspace / ".scribe" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / CORRUPT_ON_PURPOSE).touch()
    (sessions / "20260101-000000-aaaaaa.jsonl").write_text('{"not": "an event"}\nnonsense\n')
    env = scribe_env(NO_API, home)
    listed = run_scribe(["log", "list"], workspace, env)
    assert listed.code == 0 and "no sessions yet" not in listed.err
    assert "20260101-000000-aaaaaa" in listed.out and "cannot be continued" in listed.out
    ran = run_scribe(["run", "-c", "hi"], workspace, env)
    assert ran.code == 2 and "Traceback" not in ran.err
    assert ran.err.strip() == (f"scribe: no session to continue in {sessions}: every log is damaged "
                               "(20260101-000000-aaaaaa: its first line is unreadable (line lacks an integer "
                               "seq, a ts or a type))")
