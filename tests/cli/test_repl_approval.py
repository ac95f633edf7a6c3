"""Approval questions answered only on purpose, and Ctrl-Z and Ctrl-D, typed at the real `scribe`
executable in a pseudo-terminal (pexpect) against the fake API. Each command the scripted model
asks for touches a marker file, so whether it ran is on disk, not in what the screen says."""

from __future__ import annotations

import io
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from helpers import SCRIBE, events_of, running_in, scribe_env, session_logs, wait_for
from pane import TmuxPane
from scribe.cli.repl.question import GUARD_S
from scribe.fakeapi import FakeMessagesServer, Reply, ScriptItem, tool_use_block
from scribe.log.events import InterruptEvent, ToolResultEvent, UserEvent

ESC, CTRL_D, CTRL_Z = "\x1b", "\x04", "\x1a"
SENTENCE = "what about xyz, is that a good idea? any thoughts"  # holds an a, a y and an n
REACTION_S = 0.4  # a person reading the question and answering it
CPR_REQUEST = "\x1b[6n"
CPR_WARNING = "your terminal doesn't support cursor position requests"
SLEEP = "26.5"  # a duration no other test uses, so the process is ours to find
# turn label -> the commands its model asks for, one after another; by default one that leaves
# a marker file `ran-LABEL`
COMMANDS = {"two": ["touch ran-two-1", "touch ran-two-2"], "sleep": [f"sleep {SLEEP}"]}


def responder(request: dict[str, Any]) -> ScriptItem:
    """turn-LABEL: ask for LABEL's commands one per call, then say `done LABEL`; anything else
    the person says is echoed back (`heard: ...`)."""
    if not request.get("tools"):  # a memory call (observer, reflector)
        return Reply.text("🔴 the user asked for commands")
    label, results = None, 0
    for message in reversed(request["messages"]):
        blocks = message["content"] if isinstance(message["content"], list) else []
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        if message["role"] == "user" and texts:
            if not texts[-1].startswith("turn-"):
                return Reply.text(f"heard: {texts[-1]}")
            label = texts[-1][len("turn-"):]
            break
        results += sum(1 for b in blocks if b.get("type") == "tool_result")
    assert label is not None
    commands = COMMANDS.get(label, [f"touch ran-{label}"])
    if results < len(commands):
        return Reply([tool_use_block("run_command", {"command": commands[results]})])
    return Reply.text(f"done {label}")


@pytest.fixture
def busy_machine() -> Iterator[None]:
    """A process burning a CPU beside scribe for the test's duration."""
    burner = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        yield
    finally:
        burner.kill()
        burner.wait()


def spawn(server: FakeMessagesServer, workspace: Path, home: Path, screen: io.StringIO,
          **env: str) -> pexpect.spawn:
    # No PROMPT_TOOLKIT_NO_CPR unless asked: the pty never answers a cursor-position request.
    child = pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=scribe_env(server.base_url, home, **env),
                          dimensions=(30, 100), encoding="utf-8", timeout=30)
    child.logfile_read = screen
    child.expect("permission mode ask")
    return child


def leave(child: pexpect.spawn) -> None:
    """At the next prompt, /exit, and wait for the process to end."""
    child.expect("›")
    child.send("/exit\r")
    child.expect(pexpect.EOF)


def question_for(child: pexpect.spawn, command: str) -> None:
    """Wait until the question about `command` is drawn (not an earlier question's last drawing)."""
    child.expect_exact(command)
    child.expect(r"allow run_command\?")


def users_and_results(workspace: Path) -> tuple[list[str], list[str]]:
    events = events_of(session_logs(workspace)[0])
    return ([e.text for e in events if isinstance(e, UserEvent)],
            [e.output for e in events if isinstance(e, ToolResultEvent)])


@pytest.mark.slow
def test_typed_text_answers_only_as_a_whole_word_and_a_sentence_allows_nothing(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    with FakeMessagesServer(responder) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color")
        term = TmuxPane(tmp_path / "tmux.sock")
        term.start(f"env -i {' '.join(f'{k}={shlex.quote(v)}' for k, v in env.items())} {SCRIBE}", 100, 30, workspace)
        try:

            def ask(label: str) -> None:
                term.wait("›")
                term.type(f"turn-{label}")
                term.send("Enter")
                term.wait(f"run_command touch ran-{label}")
                term.wait("allow run_command?")
                time.sleep(GUARD_S + 0.2)  # a person reading the question

            # a sentence: its a, y and n are text, Enter allows nothing and stops the turn
            ask("sentence")
            term.type(SENTENCE)
            term.wait("not an answer: Enter stops the turn")
            term.send("Enter")
            term.wait("nothing allowed: the turn stops")
            screens = [term.wait(f"› {SENTENCE}")]  # waiting at the prompt, to send or change
            term.send("Enter")
            term.wait(f"heard: {SENTENCE}")

            # `a` is no key for "always": alone it is not an answer, and the question stays
            ask("a")
            term.type("a")
            screens.append(term.wait("always⏎: no more questions about run_command this session"))
            term.send("Enter")
            term.wait("“a” is not an answer")
            time.sleep(GUARD_S + 0.2)
            term.type("n")
            term.wait("done a")

            # once something else is typed, `y` is text: `xy` then Enter is no answer
            ask("word")
            term.type("xy")
            term.send("Enter")
            term.wait("“xy” is not an answer")
            term.type("no")  # a whole word, or a lone `n` and the rest of its word
            term.send("Enter")
            term.wait("done word")

            # the word `always` allows it for the rest of the session
            ask("always")
            term.type("always")
            term.send("Enter")
            term.wait("done always")
            term.type("turn-after")  # runs without a question
            term.send("Enter")
            term.wait("done after")
            term.type("/exit")
            term.send("Enter")
            assert wait_for(lambda: term.exit_status() is not None), term.screen()
            status, last = term.exit_status(), term.screen()
        finally:
            term.stop()
    print("\n\n".join([*screens, last]))  # shown with -s: the screens the report quotes
    assert status == 0, last
    assert "Traceback" not in last
    assert not (workspace / "ran-sentence").exists()  # the sentence allowed nothing
    assert not (workspace / "ran-a").exists() and not (workspace / "ran-word").exists()
    assert (workspace / "ran-always").exists() and (workspace / "ran-after").exists()
    users, results = users_and_results(workspace)
    assert users == ["turn-sentence", SENTENCE, "turn-a", "turn-word", "turn-always", "turn-after"]
    assert results[:2] == ["run_command was declined by the user"] * 2, results
    assert len(results) == 4
    interrupts = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, InterruptEvent)]
    assert len(interrupts) == 1 and interrupts[0].tool_use_ids  # the sentence's question, left unanswered


@pytest.mark.slow
def test_an_answer_at_reaction_speed_is_taken_without_cpr_on_a_busy_machine(
        workspace: Path, home: Path, busy_machine: None) -> None:
    screen = io.StringIO()
    with FakeMessagesServer(responder) as server:
        child = spawn(server, workspace, home, screen, TERM="xterm-256color")
        try:
            child.expect("›")
            child.send("turn-two\r")
            question_for(child, "touch ran-two-1")
            asked_from = len(screen.getvalue())
            time.sleep(REACTION_S)
            child.send("y")
            question_for(child, "touch ran-two-2")
            time.sleep(2.5)  # a person reading slowly: past prompt-toolkit's wait for a CPR answer
            child.send("y")
            child.expect("done two")
            leave(child)
        finally:
            child.close()
    transcript = screen.getvalue()
    assert child.exitstatus == 0, transcript[-2000:]
    assert (workspace / "ran-two-1").exists() and (workspace / "ran-two-2").exists()
    asked = transcript[asked_from:transcript.index("done two", asked_from)]
    assert "ignored" not in asked, asked
    # while a question is up, nothing waits for a terminal that does not answer
    assert CPR_REQUEST not in asked and CPR_WARNING not in asked, asked


def _stat(pid: int) -> tuple[str, int]:
    """A process's state letter (T: stopped) and its parent's pid, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def scribe_under(shell: int) -> int | None:
    """The pid of the scribe the shell `shell` started, if it runs."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if SCRIBE.encode() in (proc / "cmdline").read_bytes() and _stat(int(proc.name))[1] == shell:
                return int(proc.name)
        except OSError:
            continue  # gone while we looked
    return None


def stopped(pid: int) -> bool:
    return _stat(pid)[0] == "T"



def start_the_sleep(child: pexpect.spawn, workspace: Path) -> None:
    """Ask for the long command, allow it once the question has been up long enough to take a
    key, and wait until it runs."""
    child.send("turn-sleep\r")
    child.expect(r"allow run_command\?")
    time.sleep(GUARD_S + 0.2)
    child.send("y")
    assert wait_for(lambda: running_in(workspace, "sleep", SLEEP))

@pytest.mark.slow
def test_ctrl_z_suspends_at_the_prompt_and_during_a_command_and_fg_resumes(
        workspace: Path, home: Path) -> None:
    """Under an interactive bash with job control, as a person runs it: Ctrl-Z stops scribe (the
    tty's SIGTSTP during a turn, prompt-toolkit's Ctrl-Z at the prompt), `fg` continues it
    (SIGCONT), and every key works after."""
    screen = io.StringIO()
    with FakeMessagesServer(responder) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1",
                         PS1="shell$ ")
        shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], cwd=str(workspace), env=env,
                              dimensions=(30, 100), encoding="utf-8", timeout=30)
        shell.logfile_read = screen
        try:
            shell.expect_exact("shell$ ")
            shell.send(f"{SCRIBE}\r")
            shell.expect("permission mode ask")
            shell.expect("›")
            pid = scribe_under(shell.pid)
            assert pid is not None

            # at the prompt, with a message half typed
            shell.send("hel")
            shell.send(CTRL_Z)
            shell.expect("Stopped")
            shell.expect_exact("shell$ ")
            assert wait_for(lambda: stopped(pid))
            shell.send("fg\r")
            assert wait_for(lambda: not stopped(pid))
            shell.expect("›")
            shell.send("lo\r")  # the line is as it was: Enter sends it, with no ^Z in it
            shell.expect("heard: hello")

            # during a running command
            shell.expect("›")
            start_the_sleep(shell, workspace)
            shell.send(CTRL_Z)
            shell.expect("Stopped")
            shell.expect_exact("shell$ ")
            assert wait_for(lambda: stopped(pid))
            shell.send("fg\r")
            assert wait_for(lambda: not stopped(pid))
            time.sleep(0.5)  # a person looking back at the screen
            shell.send(ESC)  # still cancels the turn
            shell.expect("interrupted")
            assert wait_for(lambda: not running_in(workspace, "sleep", SLEEP))
            shell.expect("›")
            shell.send("still there?\r")
            shell.expect("heard: still there\\?")
            shell.expect("›")
            shell.send("/exit\r")
            shell.expect_exact("shell$ ")
            shell.send("exit\r")
            shell.expect(pexpect.EOF)
        finally:
            shell.close(force=True)
    transcript = screen.getvalue()
    assert "Traceback" not in transcript, transcript
    [log] = session_logs(workspace)
    assert b"\\u001a" not in log.read_bytes() and b"\x1a" not in log.read_bytes()
    users, results = users_and_results(workspace)
    assert users == ["hello", "turn-sleep", "still there?"]
    assert len(results) == 1 and "cancelled" in results[0], results  # the command, ended by Esc


@pytest.mark.slow
def test_ctrl_d_during_a_turn_cancels_it_and_ends_scribe(workspace: Path, home: Path) -> None:
    screen = io.StringIO()
    with FakeMessagesServer(responder) as server:
        child = spawn(server, workspace, home, screen, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        try:
            child.expect("›")
            start_the_sleep(child, workspace)
            child.send(CTRL_D)
            child.expect("interrupted")
            child.expect_exact("(Ctrl-D: scribe ends)")
            child.expect("`scribe -c` continues it")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    assert child.exitstatus == 0, screen.getvalue()[-2000:]
    assert not running_in(workspace, "sleep", SLEEP)
    users, results = users_and_results(workspace)
    assert users == ["turn-sleep"] and len(results) == 1 and "cancelled" in results[0], results
