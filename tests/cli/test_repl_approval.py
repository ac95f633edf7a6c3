"""Approval questions answered only on purpose, and Ctrl-Z and Ctrl-D, typed at the real `scribe`
executable in a pseudo-terminal (pexpect) against the fake API. Each command the scripted model
asks for touches a marker file, so whether it ran is on disk, not in what the screen says."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from helpers import NO_API, SCRIBE, events_of, run_scribe, running_in, scribe_env, session_logs, wait_for
from pane import TmuxPane
from scribe.cli.repl.question import GUARD_S
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, ScriptItem, tool_use_block
from scribe.log.events import InterruptEvent, ToolResultEvent, UserEvent

ESC, CTRL_D, CTRL_Z = "\x1b", "\x04", "\x1a"
SENTENCE = "what about xyz, is that a good idea? any thoughts"  # holds an a, a y and an n
REACTION_S = 0.4  # a person reading the question and answering it
CPR_REQUEST = "\x1b[6n"
CPR_WARNING = "your terminal doesn't support cursor position requests"
SLEEP = "26.5"  # a duration no other test uses, so the process is ours to find
# turn label -> the commands its model asks for, one after another; by default one that leaves
# a marker file `ran-LABEL`
COMMANDS = {"two": ["touch ran-two-1", "touch ran-two-2"], "sleep": [f"sleep {SLEEP}"],
            "slow": ["sleep 1.6", "touch ran-slow"], "busy": ["sleep 2.6"]}


def responder(request: dict[str, Any]) -> ScriptItem:
    """turn-LABEL: ask for LABEL's commands one per call, then say `done LABEL`; anything else
    the person says is echoed back (`heard: ...`); `turn-hang` is never answered."""
    if not request.get("tools"):  # a memory call (observer, reflector)
        return Reply.text("🔴 the user asked for commands")
    if request["messages"][-1]["content"][-1].get("text") == "turn-hang":
        return Fault(kind="hang")  # a model call that never answers, until cancelled
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


def sent_texts(server: FakeMessagesServer) -> set[str]:
    """Every text of the person's side the fake API received in an agent call, less the lines
    scribe writes itself (`[outside scribe: ...]`, `[while your command ran: ...]`)."""
    return {block["text"] for request in server.requests if request.json.get("tools")
            for message in request.json["messages"] if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"] if block.get("type") == "text" and not block["text"].startswith("[")}


def in_tmux(server: FakeMessagesServer, workspace: Path, home: Path, tmp_path: Path) -> TmuxPane:
    term = TmuxPane(tmp_path / "tmux.sock")
    term.start_program(SCRIBE, scribe_env(server.base_url, home, TERM="xterm-256color"), workspace)
    return term


def wait_after(term: TmuxPane, anchor: str, text: str) -> str:
    """The screen once `text` shows below the last `anchor` (not an earlier turn's `text`)."""
    assert wait_for(lambda: text in term.screen().split(anchor)[-1] and anchor in term.screen(), 30), term.screen()
    return term.screen()


def prompt_ready(term: TmuxPane) -> None:
    term.prompt_ready()


def at_prompt(term: TmuxPane, text: str) -> str:
    return term.at_prompt(text)


def leave_tmux(term: TmuxPane) -> tuple[int | None, str]:
    prompt_ready(term)
    term.type("/exit")
    term.send("Enter")
    assert wait_for(lambda: term.exit_status() is not None), term.screen()
    return term.exit_status(), term.screen()


@pytest.mark.slow
def test_typed_text_answers_only_as_a_whole_word_and_a_sentence_allows_nothing(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    """Typed at 150 ms a key: only a whole answer word, or a lone key, answers."""
    with FakeMessagesServer(responder) as server:
        term = in_tmux(server, workspace, home, tmp_path)
        try:

            def ask(label: str) -> None:
                prompt_ready(term)
                term.type(f"turn-{label}")
                term.send("Enter")
                wait_after(term, f"run_command touch ran-{label}", "allow run_command?")
                time.sleep(GUARD_S + 0.2)  # a person reading the question

            # a sentence: its a, y and n are text, Enter allows nothing and stops the turn
            ask("sentence")
            term.typing(SENTENCE[:12])
            term.type(SENTENCE[12:])
            term.wait("not an answer: Enter stops the turn")
            term.send("Enter")
            term.wait("nothing allowed: the turn stops")
            screens = [at_prompt(term, SENTENCE[:40])]  # waiting at the prompt, to send or change
            term.send("Enter")
            term.wait(f"heard: {SENTENCE}")

            # `y` with more typed close behind it is a word, and `yse` is none: asked again
            ask("yse")
            term.typing("yse\n")
            screens.append(term.wait("“yse” is not an answer"))
            time.sleep(1)
            term.typing("n")  # alone: no
            term.wait("done yse")

            # `yes please` is a sentence: nothing allowed, and it waits at the prompt unsent
            ask("please")
            term.typing("yes please\n")
            term.wait("nothing allowed: the turn stops")
            at_prompt(term, "yes please")
            term.send("C-c")  # the person clears it instead of sending it

            ask("no")
            term.typing("n\n")
            term.wait("done no")

            # `a` is no key for "always": alone it is not an answer, and the question stays
            ask("a")
            term.type("a")
            screens.append(term.wait("always⏎: no more questions about run_command this session"))
            term.send("Enter")
            term.wait("“a” is not an answer")
            time.sleep(GUARD_S + 0.2)
            term.type("n")
            term.wait("done a")

            # the word `always` allows it for the rest of the session: asked which rule to keep
            # instead (the exact command, its prefix), `s` keeps none and allows all of run_command
            ask("always")
            term.typing("always\n")
            screens.append(term.wait("keep a rule instead: 1, 2, or s (all of run_command, this session only)"))
            assert "1: run_command(touch ran-always)" in screens[-1] and "2: run_command(touch:*)" in screens[-1]
            time.sleep(GUARD_S + 0.2)
            term.type("s")
            term.wait("done always")
            prompt_ready(term)
            term.type("turn-after")  # runs without a question
            term.send("Enter")
            term.wait("done after")
            status, last = leave_tmux(term)
        finally:
            term.stop()
    print("\n\n".join([*screens, last]))  # shown with -s: the screens the report quotes
    assert status == 0, last
    assert "Traceback" not in last
    assert not (workspace / "ran-sentence").exists()  # the sentence allowed nothing
    for label in ("yse", "please", "no", "a"):
        assert not (workspace / f"ran-{label}").exists(), label
    assert (workspace / "ran-always").exists() and (workspace / "ran-after").exists()
    users, results = users_and_results(workspace)
    assert users == ["turn-sentence", SENTENCE, "turn-yse", "turn-please", "turn-no", "turn-a", "turn-always",
                     "turn-after"]
    assert sent_texts(server) == set(users)  # what the model received: nothing typed at a question unsent
    assert results[:3] == ["run_command was declined by the user"] * 3, results
    assert len(results) == 5
    interrupts = [e for e in events_of(session_logs(workspace)[0]) if isinstance(e, InterruptEvent)]
    assert len(interrupts) == 2 and all(i.tool_use_ids for i in interrupts)  # the sentences' questions


@pytest.mark.slow
def test_what_is_typed_during_a_turn_is_never_sent_by_itself_and_a_cancel_is_told_to_the_model(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    """At 150 ms a key: typing that runs into a question answers nothing and waits at the prompt,
    and a pause then `n` answers; a line typed with Enter during a turn, or right after Esc,
    waits at the prompt; the cancelled request reaches the model closed by its marker."""
    with FakeMessagesServer(responder) as server:
        term = in_tmux(server, workspace, home, tmp_path)
        try:
            prompt_ready(term)
            term.keys("turn-slow")
            wait_after(term, "sleep 1.6", "allow run_command?")
            time.sleep(GUARD_S + 0.2)
            term.type("y")
            wait_after(term, "sleep 1.6", "› yes")  # the lone key answered, once nothing followed it
            term.typing("words typed on meanwhile ")  # 3.75 s: on across the next question
            screens = [term.wait("(what you were typing is not an answer: it waits at the prompt)")]
            time.sleep(1)  # the person stops, reads the question
            term.type("n")
            wait_after(term, "ran-slow", "declined")
            term.wait("done slow")
            at_prompt(term, "words typed on meanwhile")  # none of it was lost, none of it answered
            term.send("C-c")  # the person clears it

            # a line sent with Enter while the command runs: it waits at the prompt
            prompt_ready(term)
            term.keys("turn-busy")
            wait_after(term, "sleep 2.6", "allow run_command?")
            time.sleep(GUARD_S + 0.2)
            term.type("y")
            wait_after(term, "sleep 2.6", "› yes")
            term.typing("list the tests\n")
            screens.append(at_prompt(term, "list the tests"))
            term.wait("done busy")
            term.typing(" now\n", per_key_s=0.5)  # slower: the last Enter is the person's at the prompt
            term.wait("heard: list the tests now")

            # Esc while the model is asked, then at once the next request: it waits too
            prompt_ready(term)
            term.keys("turn-hang")
            term.wait("thinking")
            term.typing("\x1bactually, just list them\n")
            screens.append(at_prompt(term, "actually, just list them"))
            time.sleep(0.5)
            term.send("Enter")
            term.wait("heard: actually, just list them")
            status, last = leave_tmux(term)
        finally:
            term.stop()
    print("\n\n".join([*screens, last]))
    assert status == 0 and "Traceback" not in last, last
    assert not (workspace / "ran-slow").exists()
    users, results = users_and_results(workspace)
    assert users == ["turn-slow", "turn-busy", "list the tests now", "turn-hang", "actually, just list them"], users
    assert sent_texts(server) == set(users)  # the words typed on across the question never reached the model
    assert results[1] == "run_command was declined by the user"
    request = run_scribe(["log", "prompt"], workspace, scribe_env(NO_API, home)).json()
    roles = [(m["role"], [b.get("text") for b in m["content"]]) for m in request["messages"]]
    assert roles[-4:] == [
        ("user", ["turn-hang"]),
        ("assistant", ["[The person cancelled this request before it finished; no tool had run. "
                       "It stays cancelled unless the person asks for it again.]"]),
        ("user", ["actually, just list them"]),
        ("assistant", ["heard: actually, just list them"])], roles


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


def writer(request: dict[str, Any]) -> ScriptItem:
    """`write notes`: the model thinks for a while, then asks to write a file, then says done;
    anything else the person says is echoed back (`heard: ...`)."""
    if not request.get("tools"):
        return Reply.text("🔴 the user asked for a file")
    last = request["messages"][-1]["content"]
    if any(b.get("type") == "tool_result" for b in last):
        return Reply.text("done writing")
    said = last[-1].get("text", "")
    if said != "write notes":
        return Reply.text(f"heard: {said}")
    time.sleep(3)  # a model taking its time: the person types meanwhile
    return Reply([tool_use_block("write_file", {"path": "notes.md", "content": "# Notes\n"})])


@pytest.mark.slow
def test_text_typed_before_a_question_is_shown_kept_and_never_sent(workspace: Path, home: Path,
                                                                    tmp_path: Path) -> None:
    """Typed at a person's speed while the model thinks: the words show under the spinner as
    they are typed; the question that then appears is not answered by them (it says where they
    went); after `y` the turn ends and they wait at the prompt, editable and unsent, until the
    person sends them."""
    with FakeMessagesServer(writer) as server:
        term = in_tmux(server, workspace, home, tmp_path)
        try:
            prompt_ready(term)
            term.keys("write notes")
            term.wait("thinking")
            term.typing("add docs")
            typing = term.wait("next › add docs")  # shown as typed, under the spinner
            question = wait_after(term, "write_file notes.md", "allow write_file?")
            assert "(what you were typing is not an answer: it waits at the prompt)" in question, question
            time.sleep(GUARD_S + REACTION_S)  # the person reads the question
            term.type("y")
            term.wait("done writing")
            waiting = at_prompt(term, "add docs")  # at the next prompt, not sent
            assert "heard: add docs" not in waiting
            term.typing(" please", per_key_s=0.2)  # editable: the person adds to it, then sends it
            time.sleep(0.5)
            term.send("Enter")
            term.wait("heard: add docs please")
            status, last = leave_tmux(term)
        finally:
            term.stop()
    print("\n\n".join([typing, question, waiting, last]))
    assert status == 0 and "Traceback" not in last, last
    assert (workspace / "notes.md").read_text() == "# Notes\n"  # the `y` answered: the file was written
    users, _ = users_and_results(workspace)
    assert users == ["write notes", "add docs please"]
    assert sent_texts(server) == set(users)  # "add docs" alone never reached the model
