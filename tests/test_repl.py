"""The REPL in process: keys go in through prompt-toolkit's pipe input, the model is the fake
Messages API, tools act on a real git workspace, and what rich prints is captured."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from helpers import events_of, running, session_logs, sleep_argv, wait_for
from scribe.agent.config import load_settings
from scribe.agent.runtime import SessionChoice, choose_session
from scribe.cli.repl.loop import Repl, start
from scribe.cli.repl.view import View
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.memory.events import InterruptEvent, ToolResultEvent, UserEvent

UP, ESC, CTRL_C, CTRL_D = "\x1b[A", "\x1b", "\x03", "\x04"


@pytest.fixture(autouse=True)
def person(monkeypatch: pytest.MonkeyPatch, workspace: Path, tmp_path: Path) -> Iterator[None]:
    """A person in the workspace with no stray config (the fake API's URL is set per test)."""
    for name in list(os.environ):
        if name.startswith(("SCRIBE_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    # These tests script every model call; notes curation (its own call) is tested on its own.
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "false")
    monkeypatch.chdir(workspace)
    yield


@dataclass
class Ran:
    out: str  # what rich printed
    toolbar: str  # the bottom bar after the last line
    server: FakeMessagesServer
    texts: list[str]  # the user texts the model received, request by request


def run_repl(workspace: Path, script: list[Reply] | FakeMessagesServer, keys: str, *, mode: str = "ask",
             choice: SessionChoice | None = None, during: threading.Thread | None = None) -> Ran:
    """Type `keys` into a REPL in `workspace` until they run out (then the input ends: Ctrl-D).
    A server passed in is left running (its prompt cache outlives this REPL)."""
    out = io.StringIO()
    owned = not isinstance(script, FakeMessagesServer)
    server = FakeMessagesServer(script) if not isinstance(script, FakeMessagesServer) else script
    os.environ["ANTHROPIC_BASE_URL"] = server.start()
    try:
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text(keys + CTRL_D)
            settings = load_settings(workspace, {"permission_mode": mode, "max_retries": 0})
            repl = Repl(workspace, settings, View(Console(file=out, width=110)))
            repl.open(choose_session(workspace, settings, choice or SessionChoice()), resumed=choice is not None)
            if during is not None:
                during.start()
            try:
                repl.loop()
                toolbar = repl.toolbar()
            finally:
                repl.close()
    finally:
        if owned:
            server.stop()
    texts = [_last_user_text(r.json) for r in server.requests]
    return Ran(out.getvalue(), toolbar, server, texts)


def _last_user_text(body: dict) -> str:  # type: ignore[type-arg]
    content = body["messages"][-1]["content"]
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def test_a_turn_streams_its_answer_and_the_toolbar_counts_it(workspace: Path) -> None:
    ran = run_repl(workspace, [Reply.text("Hello from the **fake** model.")], "say hello\r")
    assert "Hello from the **fake** model." in ran.out  # plain console: streamed as it came
    assert ran.texts == ["say hello"]
    assert "claude-sonnet-5-5 │ ask │ $0.0" in ran.toolbar
    assert "│ context ~" in ran.toolbar and "last ·" in ran.toolbar
    assert "saved; `scribe -c` continues it" in ran.out


def test_approvals_yes_no_always(workspace: Path) -> None:
    script = [
        Reply([tool_use_block("write_file", {"path": "notes.txt", "content": "one\ntwo\n"})]),
        Reply([tool_use_block("edit_file", {"path": "notes.txt", "old_text": "two", "new_text": "TWO"})]),
        Reply([tool_use_block("run_command", {"command": "echo first > ran.txt"})]),
        Reply([tool_use_block("run_command", {"command": "echo second >> ran.txt"})]),
        Reply.text("All done."),
    ]
    # y for the write, n for the edit, a for the first command; the second command must not ask
    ran = run_repl(workspace, script, "make notes\rYna")
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n"  # the edit was declined
    assert (workspace / "ran.txt").read_text() == "first\nsecond\n"
    assert "creates notes.txt: 2 lines, 8 bytes" in ran.out
    assert "-two" in ran.out and "+TWO" in ran.out  # the diff the edit would have made
    declined = ran.server.requests[2].json["messages"][-1]["content"][0]
    assert declined["is_error"] is True and declined["content"] == "edit_file was declined by the user"
    results = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in results] == [False, True, False, False]
    assert "All done." in ran.out


def test_slash_commands(workspace: Path) -> None:
    keys = "".join(f"{line}\r" for line in [
        "/help", "hello", "/stats", "/log 3", "/diff", "/undo", "/model", "/model claude-opus-5",
        "/mode", "/mode full-auto", "/mode sideways", "/stat", "/xyzzy", "/usr/bin/env is odd", "/exit"])
    ran = run_repl(workspace, [Reply.text("Hi."), Reply.text("Paths are fine.")], keys)
    out = ran.out
    assert "/reflect" in out and "/resume [ID]" in out and "Alt-Enter" in out  # /help
    assert "calls        1" in out and "cost         $0.0" in out  # /stats
    assert str(session_logs(workspace)[0]) in out and "usage" in out  # /log
    assert "no changes since" in out  # /diff in a clean repository
    assert "no scribe commit in this session to undo" in out  # /undo without auto-commit
    assert "model claude-sonnet-5-5 (new sessions: claude-sonnet-5-5)" in out
    assert "model claude-opus-5 from the next call (was claude-sonnet-5-5)" in out
    # the switch holds for this session: the turn after it went to the new model
    assert [r.json["model"] for r in ran.server.requests] == ["claude-sonnet-5-5", "claude-opus-5"]
    assert "claude-opus-5 │" in ran.toolbar
    assert "permission mode ask  (modes:" in out and "permission mode full-auto" in out
    assert "unknown mode 'sideways'" in out
    assert "unknown command /stat; did you mean /stats?" in out
    assert "unknown command /xyzzy; see /help" in out
    assert ran.texts == ["hello", "/usr/bin/env is odd"]  # a path is a message, not a command


def test_diff_shows_changes_since_the_session_started(workspace: Path) -> None:
    script = [Reply([tool_use_block("write_file", {"path": "README.md", "content": "# changed\n"}),
                     tool_use_block("write_file", {"path": "new.txt", "content": "fresh\n"})]),
              Reply.text("ok")]
    ran = run_repl(workspace, script, "change things\r/diff\r", mode="full-auto")
    assert "-# test workspace" in ran.out and "+# changed" in ran.out
    assert "+fresh" in ran.out and "b/new.txt" in ran.out  # untracked files count as additions


def test_undo_takes_back_the_auto_commit(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIBE_AUTO_COMMIT", "true")
    script = [Reply([tool_use_block("write_file", {"path": "made.txt", "content": "by scribe\n"})]), Reply.text("ok")]
    ran = run_repl(workspace, script, "make a file\r/undo\r/undo\r", mode="full-auto")
    assert "undid " in ran.out and "HEAD is back at" in ran.out, ran.out
    assert not (workspace / "made.txt").exists()
    assert "no scribe commit in this session to undo" in ran.out  # the second /undo has none left
    log = subprocess.run(["git", "log", "--format=%s"], cwd=workspace, capture_output=True, text=True).stdout
    assert log.strip().splitlines() == ["initial commit"]


def test_reflect_reports_the_context_before_and_after(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_repl(workspace, [Reply.text("Hi.")], "hello\r/reflect\r")
    assert "reflect: context ~" in ran.out
    assert "nothing to observe: the raw tail is within the retention floor" in ran.out


def test_clear_and_resume_switch_sessions(workspace: Path) -> None:
    keys = "first question\r/clear\rsecond question\r/resume\r"
    run = run_repl(workspace, [Reply.text("First answer."), Reply.text("Second answer.")], keys)
    # ids made in the same second sort by their random part, so tell the logs apart by content
    first, second = sorted(session_logs(workspace), key=lambda p: "second question" in p.read_text())
    assert f"  {first.stem}     1 turn  first question" in run.out
    assert f"* {second.stem}     1 turn  second question" in run.out
    again = run_repl(workspace, [Reply.text("Back in the first.")], f"/resume {first.stem[:-1]}\rand now?\r")
    assert "First answer." in again.out  # the exchange shown on switching
    users = [e.text for e in events_of(first) if isinstance(e, UserEvent)]
    assert users == ["first question", "and now?"]


def test_continue_shows_the_last_exchanges(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = FakeMessagesServer([Reply.text(f"Answer {n}.") for n in range(1, 5)] + [Reply.text("Continued.")])
    with server:
        run_repl(workspace, server, "".join(f"question {n}\r" for n in range(1, 5)))
        capsys.readouterr()
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            pipe.send_text("one more\r" + CTRL_D)
            start(continue_=True, resume=None, permission_mode=None, model=None)
    out = capsys.readouterr().out
    assert "continuing session" in out and "permission mode ask" in out
    assert "question 1" not in out and "› question 2" in out and "Answer 4." in out
    assert out.index("Answer 4.") < out.index("Continued.")
    # the first call after resuming reads the whole previous prompt from the cache
    assert server.requests[4].usage["cache_read_input_tokens"] == sum(
        server.requests[3].usage[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def test_history_is_kept_per_workspace_and_up_recalls_it(workspace: Path) -> None:
    run_repl(workspace, [Reply.text("one")], "remember me\r")
    assert "remember me" in (workspace / ".scribe" / "history").read_text()
    ran = run_repl(workspace, [Reply.text("two")], UP + "\r")
    assert ran.texts == ["remember me"]


def test_alt_enter_and_a_bracketed_paste_keep_newlines(workspace: Path) -> None:
    paste = "\x1b[200~pasted one\npasted two\x1b[201~"
    ran = run_repl(workspace, [Reply.text("a"), Reply.text("b")], f"line one{ESC}\rline two\r{paste}\r")
    assert ran.texts == ["line one\nline two", "pasted one\npasted two"]


def test_ctrl_c_clears_a_line_and_twice_on_an_empty_line_exits(workspace: Path) -> None:
    ran = run_repl(workspace, [], "half typed" + CTRL_C + CTRL_C + CTRL_C + "never sent\r")
    assert "Ctrl-C again or Ctrl-D to exit" in ran.out
    assert ran.server.requests == []


def test_ctrl_c_during_a_command_cancels_the_turn_and_the_session_goes_on(workspace: Path) -> None:
    pidfile = workspace / "pid"

    def interrupt_when_running() -> None:
        deadline = time.monotonic() + 20
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    # The sleep's own pid may be a sandbox's: it is found by its command line instead.
    script = [Reply([text_block("Waiting."), tool_use_block("run_command", {"command": f"echo $$ > pid; {' '.join(sleep_argv(30))}"})]),
              Reply.text("Noted: you stopped it.")]
    started = time.monotonic()
    ran = run_repl(workspace, script, "wait\rwhat now?\r", mode="full-auto",
                   during=threading.Thread(target=interrupt_when_running))
    assert time.monotonic() - started < 15
    assert "interrupted" in ran.out and "Noted: you stopped it." in ran.out
    assert wait_for(lambda: not running(*sleep_argv(30)))
    events = events_of(session_logs(workspace)[0])
    interrupts = [e for e in events if isinstance(e, InterruptEvent)]
    assert len(interrupts) == 1 and interrupts[0].reason == "cancelled by the user"
    result = next(e for e in events if isinstance(e, ToolResultEvent))  # the call keeps its partial result
    ended = "[cancelled; the command and the processes it started were ended]"
    assert result.is_error and ended in result.output
    sent = [b for m in ran.server.requests[1].json["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert sent[0]["is_error"] is True and ended in sent[0]["content"], sent


def test_an_interrupt_that_escapes_the_agent_still_closes_its_tool_call(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second Ctrl-C can land inside the agent's own interrupt handler; the REPL then records
    the interrupt itself, so no tool call is left without an answer."""
    from scribe.agent.loop import Agent
    from scribe.memory.events import AssistantEvent

    def turn(self: Agent, prompt: str) -> Iterator[object]:
        self.session.append(UserEvent, text=prompt)
        self.session.append(AssistantEvent, content=[tool_use_block("run_command", {"command": "true"}, id="toolu_x")],
                            stop_reason="tool_use")
        yield from ()
        raise KeyboardInterrupt

    monkeypatch.setattr(Agent, "turn", turn)
    ran = run_repl(workspace, [], "go\r")
    assert "interrupted" in ran.out
    events = events_of(session_logs(workspace)[0])
    assert isinstance(events[-1], InterruptEvent) and events[-1].tool_use_ids == ["toolu_x"]
