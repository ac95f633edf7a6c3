"""The real `scribe` executable in a pseudo-terminal, typed at like a person would: a streamed
answer, an approved command cancelled with Ctrl-C, /reflect, /exit, then `scribe -c`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pexpect
import pytest

from helpers import events_of, running_in, scribe_env, session_logs, spawn
from scribe.cli.repl.question import GUARD_S
from scribe.fakeapi import FakeMessagesServer, Reply, ScriptItem, side_call_kind, text_block, tool_use_block
from scribe.log.events import AssistantEvent, InterruptEvent, ToolResultEvent, UserEvent

# A duration no other test uses, so the process is ours to find.
SLEEP = "29.5"


def responder() -> Any:
    replies = iter([
        Reply.text("Hello from the streaming model, word by word."),
        Reply([text_block("Starting the long job."), tool_use_block("run_command", {"command": f"sleep {SLEEP}"})]),
        Reply.text("You stopped the job; nothing else ran."),
        Reply.text("Back again, same session."),
    ])

    def answer(request: dict[str, Any]) -> ScriptItem:
        if side_call_kind(request) != "agent":  # memory's calls, by either route
            return Reply.text("🔴 the user greeted the model and started a long job")
        return next(replies)
    return answer




def _sleep_running(workspace: Path) -> bool:
    return running_in(workspace, "sleep", SLEEP)


@pytest.mark.slow
def test_a_session_in_a_real_terminal(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with FakeMessagesServer(responder()) as server:
        # The pty has no terminal emulator to answer cursor-position requests.
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        child = spawn([], workspace, env)
        try:
            child.expect("permission mode ask")
            child.expect("›")
            child.send("say hello\r")
            child.expect("word by word")
            child.expect("›")

            child.send("start the long job\r")
            child.expect("allow run_command\\?")
            time.sleep(GUARD_S + 0.2)  # keys in the question's first moments are ignored
            child.send("y")
            deadline = time.monotonic() + 10
            while not _sleep_running(workspace) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert _sleep_running(workspace)
            child.sendintr()
            child.expect("interrupted")
            child.expect("›")
            assert not _sleep_running(workspace)  # the command's process group was killed

            child.send("what happened?\r")
            child.expect("You stopped the job")
            child.send("/reflect\r")
            child.expect("memory compression lands|reflect: context")
            child.send("/exit\r")
            child.expect("`scribe -c` continues it")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0, child.before

        again = spawn(["-c"], workspace, env)
        try:
            again.expect("continuing session")
            again.expect("› start the long job")  # the last exchanges, shown on resume
            again.expect("›")
            again.send("still there?\r")
            again.expect("Back again, same session.")
            again.expect("›")  # a Ctrl-D typed during a turn is the terminal's end-of-line, not ours
            again.sendcontrol("d")
            again.expect(pexpect.EOF)
        finally:
            again.close()
        assert again.exitstatus == 0, again.before

    [log] = session_logs(workspace)
    events = events_of(log)  # no problems: every line whole and valid
    uses = [b["id"] for e in events if isinstance(e, AssistantEvent) for b in e.content if b["type"] == "tool_use"]
    answered = {e.tool_use_id for e in events if isinstance(e, ToolResultEvent)}
    answered |= {i for e in events if isinstance(e, InterruptEvent) for i in e.tool_use_ids}
    assert uses and set(uses) <= answered
    assert [e.text for e in events if isinstance(e, UserEvent)] == [
        "say hello", "start the long job", "what happened?", "still there?"]
    assert all(r.error is None for r in server.requests)
