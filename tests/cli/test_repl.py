"""The REPL in process: keys go in through prompt-toolkit's pipe input, the model is the fake
Messages API, tools act on a real git workspace, and what rich prints is captured."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from helpers import (
    events_of,
    new_session,
    run_scribe,
    running,
    scribe_env,
    session_logs,
    sleep_argv,
    wait_for,
)
from repl_driver import Ran, person, run_repl  # noqa: F401 - person: the autouse fixture of these tests
from scribe.cli.repl.repl import start
from scribe.cli.repl.stats import tokens
from scribe.cli.repl.view import STATUS_AFTER_S
from scribe.context.render import canonical_json
from scribe.fakeapi import (
    FakeMessagesServer,
    Reply,
    SideCallModel,
    side_call_kind,
    text_block,
    tool_use_block,
)
from scribe.log.events import (
    FileChangeEvent,
    InterruptEvent,
    ObservationEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.settings.values import load_settings

UP, ESC, CTRL_C, CTRL_D = "\x1b[A", "\x1b", "\x03", "\x04"




def test_a_turn_streams_its_answer_and_the_toolbar_counts_it(workspace: Path) -> None:
    ran = run_repl(workspace, [Reply.text("Hello from the **fake** model.")], "say hello\r")
    assert "Hello from the **fake** model." in ran.out  # plain console: streamed as it came
    assert ran.texts == ["say hello"]
    assert "claude-sonnet-5-5 │ ask │ $0.0" in ran.toolbar
    billed = ran.server.requests[-1].usage
    assert billed is not None
    counted = billed["input_tokens"] + billed["cache_read_input_tokens"] + billed["cache_creation_input_tokens"]
    assert f"│ context {tokens(counted)} of " in ran.toolbar and "last ·" in ran.toolbar  # as the server counted it
    assert "saved; `scribe -c` continues it" in ran.out


def test_approvals_yes_no_always(workspace: Path) -> None:
    script = [
        Reply([tool_use_block("write_file", {"path": "notes.txt", "content": "one\ntwo\n"})]),
        Reply([tool_use_block("edit_file", {"path": "notes.txt", "old_text": "two", "new_text": "TWO"})]),
        Reply([tool_use_block("run_command", {"command": "echo first > ran.txt"})]),
        Reply([tool_use_block("run_command", {"command": "echo second >> ran.txt"})]),
        Reply.text("All done."),
    ]
    # y for the write, n for the edit, the word "always" for the first command (`a` alone is
    # not an answer: it asks again); the second command must not ask. A script's keys come at
    # once: a letter with another close behind it is the start of a word, so each is sent.
    ran = run_repl(workspace, script, "make notes\rY\rn\ra\ralways\r")
    assert (workspace / "notes.txt").read_text() == "one\ntwo\n"  # the edit was declined
    assert (workspace / "ran.txt").read_text() == "first\nsecond\n"
    assert "creates notes.txt: 2 lines, 8 bytes" in ran.out
    assert "-two" in ran.out and "+TWO" in ran.out  # the diff the edit would have made
    declined = ran.server.requests[2].json["messages"][-1]["content"][0]
    assert declined["is_error"] is True and declined["content"] == "edit_file was declined by the user"
    events = events_of(session_logs(workspace)[0])
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in results] == [False, True, False, False]
    assert [e.text for e in events if isinstance(e, UserEvent)] == ["make notes"]  # "always" answered
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
    assert "nothing to undo: scribe's file tools have changed no file" in out  # /undo without auto-commit
    assert "model claude-sonnet-5-5 (sessions /clear starts here: claude-sonnet-5-5)" in out
    assert "model claude-opus-5 from the next call (was claude-sonnet-5-5)" in out
    # the switch holds for this session: the turn after it went to the new model
    assert [r.json["model"] for r in ran.server.requests] == ["claude-sonnet-5-5", "claude-opus-5"]
    assert "claude-opus-5 │" in ran.toolbar
    assert "permission mode ask  (modes:" in out and "permission mode full-auto" in out
    assert "unknown mode 'sideways'" in out
    assert "unknown command /stat, not sent to the model; did you mean /stats, /cost?" in out
    assert "unknown command /xyzzy, not sent to the model; /help lists the commands" in out
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
    assert "nothing to undo" in ran.out  # the second /undo has none left
    log = subprocess.run(["git", "log", "--format=%s"], cwd=workspace, capture_output=True, text=True).stdout
    assert log.strip().splitlines() == ["initial commit"]


def test_compact_with_a_focus_compacts_now_and_the_log_rebuilds_its_request(workspace: Path) -> None:
    """`/compact FOCUS` as in Claude Code: it compacts now, although the conversation is well
    within the raw tokens always kept word for word (6,000 here), and the Observer is told the
    focus; the log records it, so `scribe log prompt --at` rebuilds that request byte for byte."""
    message = "Please remember the plan. " + " ".join(f"step{n}" for n in range(300))
    with FakeMessagesServer(SideCallModel([Reply.text("Noted the plan.")])) as server:
        ran = run_repl(workspace, server, f"{message}\r/compact the deployment steps\r")
    said = " ".join(ran.out.split())
    assert re.search(r"reflect: context ~[\d.]+k → ~[\d.]+k tokens \(observations 0 → \d+, raw \d+ → 0\)", said), said
    [observer] = [r for r in ran.server.requests if side_call_kind(r.json) == "observer"]
    assert "The person asked for this compaction with a focus: the deployment steps." in json.dumps(observer.json)
    events = events_of(session_logs(workspace)[0])
    [usage] = [e for e in events if isinstance(e, UsageEvent) and e.purpose == "observer"]
    assert usage.extra["side_call"]["focus"] == "the deployment steps"
    assert [e for e in events if isinstance(e, ObservationEvent)]
    rebuilt = run_scribe(["log", "prompt", "--at", str(usage.seq)], workspace, dict(os.environ))
    assert rebuilt.code == 0 and rebuilt.out.strip() == canonical_json(observer.json), rebuilt.err


def test_clear_and_resume_switch_sessions(workspace: Path) -> None:
    keys = "first question\r/clear\rsecond question\r/resume\r"
    run = run_repl(workspace, [Reply.text("First answer."), Reply.text("Second answer.")], keys)
    # ids made in the same second sort by their random part, so tell the logs apart by content
    first, second = sorted(session_logs(workspace), key=lambda p: "second question" in p.read_text())
    assert re.search(rf"  {first.stem}  \d{{4}}-\d\d-\d\d \d\d:\d\d     1 turn  first question", run.out)
    assert re.search(rf"\* {second.stem}  \d{{4}}-\d\d-\d\d \d\d:\d\d     1 turn  second question", run.out)
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
    from scribe.agent.loop import TurnLoop
    from scribe.log.events import AssistantEvent

    def turn(self: TurnLoop, prompt: str, images: object = (), command: object = None,
             attached_at: object = None) -> Iterator[object]:
        self.session.append(UserEvent, text=prompt)
        self.session.append(AssistantEvent, content=[tool_use_block("run_command", {"command": "true"}, id="toolu_x")],
                            stop_reason="tool_use")
        yield from ()
        raise KeyboardInterrupt

    monkeypatch.setattr(TurnLoop, "turn", turn)
    ran = run_repl(workspace, [], "go\r")
    assert "interrupted" in ran.out
    events = events_of(session_logs(workspace)[0])
    assert isinstance(events[-1], InterruptEvent) and events[-1].tool_use_ids == ["toolu_x"]


def test_slash_commands_in_any_case_never_reach_the_model_and_check_their_arguments(workspace: Path) -> None:
    lines = ["/HELP", "/Stats", "/exit_now", "/HELP2", "/x.y", "/", "//help me", "/usr/bin/env is broken",
             "/log 0", "/log abc", "/log -1", "/log 2", "/mode FULL-AUTO", "/diff extra", "/diff --stat",
             "/stats now", "/help LOG", "/help nope", "/todos more", "/model a b", "/undo it", "/clear all",
             "/resume a b", "/notes later", "/exit now", "/EXIT"]
    ran = run_repl(workspace, [Reply.text("A slash message."), Reply.text("A path message.")],
                   "".join(f"{line}\r" for line in lines))
    out = " ".join(ran.out.split())  # the console wraps long lines
    assert ran.texts == ["/help me", "/usr/bin/env is broken"]  # nothing else reached the model
    assert "/reflect" in out and "Commands are case-insensitive" in out  # /HELP
    assert "calls 0" in out  # /Stats
    assert "unknown command /exit_now, not sent to the model; did you mean /exit?" in out
    assert "unknown command /help2, not sent to the model; did you mean /help?" in out
    assert "unknown command /x.y, not sent to the model; /help lists the commands" in out
    assert "unknown command /, not sent to the model" in out
    assert "(// sends a line starting with /)" in out
    for bad in ("'0'", "'abc'", "'-1'"):
        assert f"/log N shows the last N events: N is a whole number from 1, not {bad}" in out
    assert "[0] session" not in out  # /log 2 printed its last two events, not the whole log
    assert "permission mode full-auto" in out and "unknown mode" not in out
    assert "/diff takes --stat or nothing, not 'extra'" in out
    assert "/stats takes no arguments (got 'now')" in out
    assert "/log [N] the log file and its last events" in out  # /help LOG
    assert "no command /nope; did you mean /notes, /undo, /mode?" in out
    assert "/todos takes no arguments (got 'more')" in out
    assert "/model takes one word at most: /model [NAME]" in out
    assert "/undo takes no arguments (got 'it')" in out and "/clear takes no arguments (got 'all')" in out
    assert "/resume takes one word at most" in out and "/notes takes curate or nothing, not 'later'" in out
    assert "/exit takes no arguments (got 'now')" in out
    assert "saved; `scribe -c` continues it" in out  # /EXIT left
    assert len(session_logs(workspace)) == 1  # /clear all did not start a new session


def test_a_read_only_refusal_names_the_mode_command(workspace: Path) -> None:
    script = [Reply([tool_use_block("write_file", {"path": "a.txt", "content": "a\n"})]), Reply.text("Can't.")]
    ran = run_repl(workspace, script, "write it\r", mode="read-only")
    refusal = ran.server.requests[1].json["messages"][-1]["content"][0]["content"]
    assert refusal == "write_file is not allowed in permission mode 'read-only'; the user can allow it with /mode accept-edits"


def test_a_call_the_preview_knows_will_fail_is_not_put_to_the_person(workspace: Path) -> None:
    script = [Reply([tool_use_block("edit_file", {"path": "README.md", "old_text": "absent", "new_text": "x"}),
                     tool_use_block("write_file", {"path": ".git/hooks/pre-commit", "content": "x"})]),
              Reply.text("I will read the file first.")]
    ran = run_repl(workspace, script, "fix the readme\r")  # no key for a question: none may be asked
    results = ran.server.requests[1].json["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True]
    assert results[0]["content"].startswith("old_text not found in README.md")
    assert "inside .git/" in results[1]["content"]
    assert "✗ old_text not found in README.md" in ran.out and "I will read the file first." in ran.out


def test_undo_is_not_reported_to_the_model_as_an_outside_change(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCRIBE_AUTO_COMMIT", "true")
    script = [Reply([tool_use_block("write_file", {"path": "README.md", "content": "# by scribe\n"}),
                     tool_use_block("write_file", {"path": "made.txt", "content": "by scribe\n"})]),
              Reply.text("ok"),
              # the undo's writes have long settled by the call after this command
              Reply([tool_use_block("run_command", {"command": "sleep 1"})]),
              Reply.text("I see the undo.")]
    ran = run_repl(workspace, script, "make files\r/undo\rwhat now?\r", mode="full-auto")
    assert "undid " in ran.out and not (workspace / "made.txt").exists()
    later = [json.dumps(r.json["messages"][-1]) for r in ran.server.requests[2:]]
    assert "the person undid scribe's commit" in later[0]
    assert not any("outside scribe" in text for text in later), later
    events = events_of(session_logs(workspace)[0])
    assert not any(isinstance(e, FileChangeEvent) for e in events)


def test_curation_never_keeps_the_person_waiting_and_what_it_misses_is_picked_up(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaving curates nothing; the next start curates in the background. The curator's answer
    here waits until the person's own message has reached the model: a REPL that waited for the
    curation before taking that message would never get there."""
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "true")
    asked = threading.Event()

    def answer(request: dict) -> Reply:  # type: ignore[type-arg]
        if "tool_choice" not in request:  # the agent's call (a side call forces its tool)
            asked.set()
            return Reply.text("Noted.")
        assert asked.wait(30), "the person's message never reached the model while notes were curated"
        return Reply.text("## Conventions\n- tests run with make check [from x#1]")

    with FakeMessagesServer(answer) as server:
        first = run_repl(workspace, server, "our tests run with make check\r")
        assert "curating notes" not in first.out and len(server.requests) == 1  # leaving curated nothing
        asked.clear()
        second = run_repl(workspace, server, "hello again\r")
        assert second.texts[1] == "hello again"
        notes = workspace / ".scribe" / "notes.md"
        assert wait_for(lambda: notes.is_file() and "make check" in notes.read_text())
    first_log = events_of(session_logs(workspace)[0])
    assert [e.purpose for e in first_log if isinstance(e, UsageEvent)] == ["agent", "curator"]


def test_a_slow_answer_says_what_it_waits_for(workspace: Path) -> None:
    def answer(request: dict) -> Reply:  # type: ignore[type-arg]
        time.sleep(STATUS_AFTER_S + 0.5)  # as a server that takes long to answer, or to connect
        return Reply.text("At last.")

    ran = run_repl(workspace, FakeMessagesServer(answer), "hello\r")
    assert "thinking…  (Esc or Ctrl-C cancels)" in ran.out
    assert ran.out.index("thinking…") < ran.out.index("At last.")


def test_resume_lists_dates_how_many_more_and_no_empty_sessions(workspace: Path) -> None:
    settings = load_settings(workspace, {})
    made = []
    for n in range(12):
        session = new_session(workspace, settings)
        session.append(UserEvent, text=f"question {n}")
        session.close()
        made.append(session.id)
    empty = new_session(workspace, settings)  # header only: never used
    empty.close()
    ran = run_repl(workspace, [], "/resume\r")
    listed = [line for line in ran.out.splitlines() if re.match(r" [ *] \d{8}-", line)]
    assert len(listed) == 10 and listed[-1].startswith(" * ")  # this (empty) one, and the 9 latest used
    assert empty.id not in ran.out
    assert all(re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", line) for line in listed)
    assert "question 3" in ran.out and "question 2" not in ran.out
    assert "… and 3 older sessions (`scribe log list` shows them all)" in ran.out



def test_reflect_compacts_a_message_the_retention_floor_would_keep(workspace: Path, home: Path) -> None:
    """The only exchange is longer than what is always kept raw, and observing it would cut into
    that: a compaction asked for compacts it all the same, instead of saying there is nothing to
    summarise yet."""
    long = "Please remember all of this. " + " ".join(f"word{n}" for n in range(500))
    with FakeMessagesServer(SideCallModel([Reply.text("Noted.")])) as server:
        env = scribe_env(server.base_url, home, SCRIBE_OBSERVE_TOKENS="2000")
        assert run_scribe(["run", long], workspace, env).code == 0
        ran = run_scribe(["reflect"], workspace, env)
    said = " ".join(ran.out.split()) + " ".join(ran.err.split())
    assert ran.code == 0, ran.err
    assert "nothing to summarise" not in said, said
    events = events_of(session_logs(workspace)[0])
    [observed] = [e for e in events if isinstance(e, ObservationEvent)]
    user = next(e for e in events if isinstance(e, UserEvent))
    assert observed.seq_from <= user.seq <= observed.seq_to  # the message the floor would have kept


def test_model_does_what_its_help_says_this_session_and_clear_but_not_the_config(
        workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run_repl(workspace, [Reply.text("one"), Reply.text("two")],
                   "/help model\r/model claude-opus-5\rhi\r/clear\rhello\r/model\r")
    said = " ".join(ran.out.split())
    assert ("/model NAME switches this session to NAME, and the sessions /clear starts in this REPL (the "
            "config's `model`, which later runs start with, is left as it is)") in said, said
    assert [r.json["model"] for r in ran.server.requests] == ["claude-opus-5", "claude-opus-5"]
    assert "model claude-opus-5 (sessions /clear starts here: claude-opus-5)" in said
    # what the help says: the config is not written, and a later scribe starts with its own
    assert load_settings(workspace).model == "claude-sonnet-5-5"
    config = run_scribe(["config"], workspace, scribe_env("http://127.0.0.1:9", home))
    assert [line.split()[:2] for line in config.out.splitlines() if line.startswith("model ")] == [
        ["model", "claude-sonnet-5-5"]]


def test_the_bar_of_a_session_on_another_server_shows_no_dollar_figure(workspace: Path) -> None:
    """A llama.cpp server asked for Claude's names: the bar says unpriced from the start, not
    $0.0000 until the first call and then a Claude price."""
    with FakeMessagesServer([Reply.text("Hi."), Reply.text("Hello again.")], kind="llama.cpp") as server:
        before = run_repl(workspace, server, "")
        after = run_repl(workspace, server, "hello\r")
    for ran in (before, after):
        assert "claude-sonnet-5-5 │ ask │ unpriced │" in ran.toolbar and "$" not in ran.toolbar, ran.toolbar
    assert after.texts == ["hello"]


def test_a_fetch_the_tool_refuses_anyway_is_not_put_to_the_person(workspace: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked to fetch a loopback URL, web_fetch would refuse it whatever the answer: the question
    is not asked, and the model reads the tool's refusal."""
    monkeypatch.setenv("SCRIBE_WEB_FETCH", "true")
    script = [Reply([tool_use_block("web_fetch", {"url": "http://127.0.0.1:9/admin"})]), Reply.text("I see."),
              Reply.text("Fine.")]
    # `n⏎` would answer a question; with none asked it is a message of its own
    ran = run_repl(workspace, script, "read the admin page\rn\r")
    assert "127.0.0.1 is a loopback, private, link-local or reserved address; not fetched" in " ".join(ran.out.split())
    [result] = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, ToolResultEvent)]
    assert result.is_error and "loopback" in result.output and "permission" not in result.extra
    assert "I see." in ran.out and ran.texts[-1] == "n"
