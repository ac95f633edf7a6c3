"""The keys people press at an approval question and during a turn, pressed in a real terminal:
the `scribe` executable in a pseudo-terminal (pexpect), against the fake API. One REPL answers
every question in a row: the scripted model asks for a command on each turn. Esc while a
sub-agent's model call is held at the fake API cancels the sub-agent too: its log and the
parent's say so, and the parent's next request carries the task call's result."""

from __future__ import annotations

import io
import termios
import threading
import time
from pathlib import Path
from typing import Any

import pexpect
import pytest

from helpers import SCRIBE, events_of, running_in, scribe_env, session_logs
from scribe.agent.session.instructions import SUBAGENT_GUIDANCE
from scribe.cli.repl.question import GUARD_S, LONE_S
from scribe.fakeapi import FakeMessagesServer, Reply, ScriptItem, tool_use_block
from scribe.log.events import AssistantEvent, InterruptEvent, SessionEvent, ToolResultEvent, UserEvent
from scribe.tools.command import ENDED

ESC, CTRL_C, CTRL_D, UP = "\x1b", "\x03", "\x04", "\x1b[A"
QUESTION = "allow run_command\\?"
CHOICES = "Esc: no"  # the end of the line of choices a question shows again
SLEEP = "27.5"  # a duration no other test uses, so the process is ours to find

# turn label -> the commands its model asks for, one after another, then it answers "done"
COMMANDS = {
    "slow": ["sleep 1.5; echo ran-slow", "rm -f important.txt"],
    "keep": ["sleep 1; echo ran-keep"],
    "escape-run": [f"sleep {SLEEP}"],
}


def responder(request: dict[str, Any]) -> ScriptItem:
    """turn-LABEL: ask for LABEL's commands (default `echo ran-LABEL`) one per call, then say
    done; anything else the person says is echoed back."""
    last = request["messages"][-1]["content"]
    label, results = None, 0
    for message in reversed(request["messages"]):
        blocks = message["content"] if isinstance(message["content"], list) else []
        texts = [b["text"] for b in blocks if b.get("type") == "text"]
        if message["role"] == "user" and texts:
            label = texts[-1][len("turn-"):] if texts[-1].startswith("turn-") else None
            if label is None:
                return Reply.text(f"heard: {texts[-1]}")
            break
        results += sum(1 for b in blocks if b.get("type") == "tool_result")
    assert label is not None, last
    commands = COMMANDS.get(label, [f"echo ran-{label}"])
    if results < len(commands):
        return Reply([tool_use_block("run_command", {"command": commands[results]})])
    return Reply.text(f"done {label}")


def spawn(server: FakeMessagesServer, workspace: Path, home: Path, term: str, screen: io.StringIO) -> pexpect.spawn:
    """scribe in a pseudo-terminal of the given TERM, its output copied to `screen`."""
    env = scribe_env(server.base_url, home, TERM=term, PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8", timeout=20)
    child.logfile_read = screen
    child.expect("permission mode ask")
    return child


def settle() -> None:
    """Wait out the question's guard, as a person reading it would."""
    time.sleep(GUARD_S + 0.2)


@pytest.mark.slow
def test_every_key_at_an_approval_question_and_during_a_turn(workspace: Path, home: Path) -> None:
    (workspace / "important.txt").write_text("keep me\n")
    screen = io.StringIO()
    with FakeMessagesServer(responder) as server:
        child = spawn(server, workspace, home, "xterm-256color", screen)
        try:

            def ask(label: str) -> None:
                child.expect("›")
                child.send(f"turn-{label}\r")
                child.expect(QUESTION)
                settle()

            def answered(label: str) -> None:
                child.expect(f"done {label}")

            # answers given at once, and words typed out (the rest of the word and the Enter
            # must not reach the next prompt)
            for label, keys in [("y", "y"), ("n", "n"), ("Y", "Y"), ("y-enter", "y\r"), ("yes", "yes\r"),
                                ("no", "no\r"), ("escape", ESC), ("ctrl-d", CTRL_D)]:
                ask(label)
                child.send(keys)
                answered(label)

            # keys that answer nothing: the question stays and shows the choices again (a letter
            # that answers nothing is text: Enter then says it is no answer)
            for label, key, then in [("enter", "\r", "n"), ("letter", "x\r", "y"), ("arrow", UP, "n")]:
                ask(label)
                child.send(key)
                child.expect(CHOICES)
                settle()
                child.send(then)
                answered(label)

            ask("ctrl-c")
            child.send(CTRL_C)
            child.expect("interrupted")

            # type-ahead during an approved command never answers the next question: it waits
            # at the next prompt
            ask("slow")
            child.send("y")
            child.expect("running…")  # the lone key answered
            child.send("what about xyz")  # while `sleep 1.5` runs: holds an "a" and a "y"
            child.expect(r"\(what you were typing is not an answer: it waits at the prompt\)")
            child.expect(QUESTION)
            settle()
            child.send("n")
            answered("slow")
            child.expect("what about xyz")  # in the prompt's line
            child.send(CTRL_C)  # the person clears it

            # what is typed during a turn waits at the next prompt
            ask("keep")
            child.send("y")
            child.expect("running…")
            child.send("hello there")
            answered("keep")
            child.expect("hello there")  # in the prompt's line
            child.send("\r")
            child.expect("heard: hello there")

            # Esc while a command runs cancels the turn; the session goes on
            ask("escape-run")
            child.send("y")
            child.expect("→ run_command|running")
            deadline = time.monotonic() + 10
            while not _sleep_running(workspace) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _sleep_running(workspace)
            child.send(ESC)
            child.expect("interrupted")
            assert not _sleep_running(workspace)

            ask("a")  # last: the word allows run_command for the rest of the session
            child.send("always\r")
            child.expect("keep a rule instead")  # or a rule kept in the config: s keeps it to this session
            settle()
            child.send("s")
            answered("a")
            child.expect("›")
            child.send("turn-after\r")  # runs without a question
            answered("after")

            child.expect("›")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
            # the terminal is left as scribe found it: echo and line editing on
            local_modes = termios.tcgetattr(child.child_fd)[3]
            assert local_modes & termios.ECHO and local_modes & termios.ICANON
        finally:
            child.close()
    transcript = screen.getvalue()
    assert child.exitstatus == 0, transcript[-2000:]
    assert "Traceback" not in transcript, transcript

    events = events_of(session_logs(workspace)[0])
    users = [e.text for e in events if isinstance(e, UserEvent)]
    labels = ["y", "n", "Y", "y-enter", "yes", "no", "escape", "ctrl-d", "enter", "letter", "arrow", "ctrl-c",
              "slow", "keep"]
    assert users == [*(f"turn-{label}" for label in labels), "hello there", "turn-escape-run", "turn-a",
                     "turn-after"]  # nothing typed at a question became a message
    verdicts = _verdicts(events)
    ran, declined = "ran", "declined"
    assert verdicts == {
        "echo ran-y": ran, "echo ran-n": declined, "echo ran-Y": ran, "echo ran-y-enter": ran,
        "echo ran-yes": ran, "echo ran-no": declined, "echo ran-escape": declined, "echo ran-ctrl-d": declined,
        "echo ran-enter": declined, "echo ran-letter": ran, "echo ran-arrow": declined,
        "echo ran-ctrl-c": "interrupted", "sleep 1.5; echo ran-slow": ran, "rm -f important.txt": declined,
        "sleep 1; echo ran-keep": ran, f"sleep {SLEEP}": "cancelled", "echo ran-a": ran, "echo ran-after": ran,
    }, verdicts
    assert (workspace / "important.txt").read_text() == "keep me\n"


def _verdicts(events: list[Any]) -> dict[str, str]:
    """Each command the model asked for -> ran, declined, interrupted (no result) or cancelled."""
    commands: dict[str, str] = {}
    for event in events:
        if isinstance(event, AssistantEvent):
            for block in event.content:
                if block["type"] == "tool_use":
                    commands[block["id"]] = block["input"]["command"]
    verdicts: dict[str, str] = {}
    for event in events:
        if isinstance(event, ToolResultEvent):
            if "declined by the user" in event.output:
                verdict = "declined"
            elif f"[cancelled; {ENDED}]" in event.output:
                verdict = "cancelled"
            else:
                verdict = "ran"
            verdicts[commands[event.tool_use_id]] = verdict
        elif isinstance(event, InterruptEvent):
            for use in event.tool_use_ids:
                verdicts.setdefault(commands[use], "interrupted")
    return verdicts


def _sleep_running(workspace: Path) -> bool:
    return running_in(workspace, "sleep", SLEEP)


@pytest.mark.slow
def test_the_keys_on_a_dumb_terminal_and_a_word_typed_slowly(workspace: Path, home: Path) -> None:
    """TERM=dumb: prompt-toolkit's own Enter and Ctrl-D run before a question's keys there. And
    a word typed slowly after a quick turn: its rest reaches the next prompt, which swallows it."""
    screen = io.StringIO()
    with FakeMessagesServer(responder) as server:
        child = spawn(server, workspace, home, "dumb", screen)
        try:
            for label, keys in [("enter", ["\r", UP, "x\r", "y"]), ("ctrl-d", [CTRL_D]), ("escape", [ESC]),
                                ("yes", list("yes\r")), ("no", list("no\r")), ("ctrl-c", [CTRL_C])]:
                child.expect("›")
                child.send(f"turn-{label}\r")
                child.expect(QUESTION)
                for key in keys:
                    # slowly: a letter answers alone, and the rest of its word comes after its
                    # quick turn has ended
                    time.sleep(LONE_S + 0.3)
                    child.send(key)
                child.expect("interrupted" if label == "ctrl-c" else f"done {label}")
            child.expect("›")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    transcript = screen.getvalue()
    assert "Traceback" not in transcript, transcript
    events = events_of(session_logs(workspace)[0])
    assert [e.text for e in events if isinstance(e, UserEvent)] == [
        f"turn-{label}" for label in ("enter", "ctrl-d", "escape", "yes", "no", "ctrl-c")]
    assert _verdicts(events) == {"echo ran-enter": "ran", "echo ran-ctrl-d": "declined", "echo ran-escape": "declined",
                                 "echo ran-yes": "ran", "echo ran-no": "declined", "echo ran-ctrl-c": "interrupted"}


class HeldSubagent:
    """turn-task: the parent's model hands one file to a sub-agent, whose own model call is held
    at the fake API until the test lets it go (`release`); `held` is set once it is. Anything
    else the person says is echoed back."""

    def __init__(self) -> None:
        self.held, self.release = threading.Event(), threading.Event()

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        system = request.get("system") or []
        if " ".join(b.get("text", "") for b in system).startswith(SUBAGENT_GUIDANCE):
            self.held.set()
            self.release.wait(60)
            return Reply.text("a.txt says alpha")  # too late: its caller has gone
        said = [b["text"] for b in request["messages"][-1]["content"] if b.get("type") == "text"]
        if said and said[-1] == "turn-task":
            return Reply([tool_use_block("task", {"description": "read a", "prompt": "Read a.txt; say what it says."})])
        return Reply.text(f"heard: {said[-1] if said else '(nothing)'}")


@pytest.mark.slow
def test_esc_cancels_a_running_subagent_and_the_repl_goes_on(workspace: Path, home: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    screen = io.StringIO()
    model = HeldSubagent()
    with FakeMessagesServer(model) as server:
        child = spawn(server, workspace, home, "xterm-256color", screen)
        try:
            child.expect("›")
            child.send("turn-task\r")
            assert model.held.wait(20), screen.getvalue()[-2000:]  # the sub-agent waits on its model
            child.send(ESC)
            child.expect("interrupted")
            child.expect("›")
            child.send("after the cancel\r")
            child.expect("heard: after the cancel")
            child.expect("›")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            model.release.set()
            child.close()
        requests = [r.json for r in server.requests]
    transcript = screen.getvalue()
    assert child.exitstatus == 0, transcript[-2000:]
    assert "Traceback" not in transcript, transcript

    logs = {path: events_of(path) for path in session_logs(workspace)}
    parents = [events for events in logs.values() if isinstance(events[0], SessionEvent) and events[0].parent is None]
    kids = [events for events in logs.values() if isinstance(events[0], SessionEvent) and events[0].parent]
    assert len(parents) == 1 and len(kids) == 1, list(logs)
    parent, kid = parents[0], kids[0]
    kid_header = kid[0]
    assert isinstance(kid_header, SessionEvent) and kid_header.parent is not None
    # the parent: the task call's result says the sub-agent was cancelled and where its log is
    (result,) = [e for e in parent if isinstance(e, ToolResultEvent) and e.tool == "task"]
    assert kid_header.parent["tool_use_id"] == result.tool_use_id
    assert "the sub-agent was cancelled" in result.output, result.output
    assert f"scribe log show {kid_header.id}" in result.output, result.output
    assert result.is_error and result.child is not None and result.child["session"] == kid_header.id
    assert any(isinstance(e, InterruptEvent) for e in parent)
    # the sub-agent: the cancel reached it, and its log records it
    assert any(isinstance(e, InterruptEvent) for e in kid), [type(e).__name__ for e in kid]
    assert not any(isinstance(e, AssistantEvent) for e in kid)  # its held call never answered
    # the REPL took the next message, and the model was sent the task call's result with it
    assert [e.text for e in parent if isinstance(e, UserEvent)] == ["turn-task", "after the cancel"]
    (after,) = [r for r in requests if any(b.get("text") == "after the cancel" for b in r["messages"][-1]["content"]
                                           if isinstance(b, dict))]
    sent = [b for m in after["messages"] for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result" and b["tool_use_id"] == result.tool_use_id]
    assert len(sent) == 1 and "the sub-agent was cancelled" in str(sent[0]["content"]), sent
    assert kid_header.id in str(sent[0]["content"])
