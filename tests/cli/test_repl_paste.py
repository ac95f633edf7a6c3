"""Long input shown short, through the real executable in a pseudo-terminal: a 200-line bracketed
paste stands as `[pasted 200 lines, N chars]` in the input box and in the transcript, Ctrl-O
shows it, the message sent and logged is the whole text, and `scribe -c` recaps it in one line."""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pytest

from helpers import SCRIBE, events_of, scribe_env, session_logs
from scribe.cli.repl.excerpts import message_excerpt
from scribe.cli.repl.pastes import Pastes, mark_of
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import UserEvent

PASTE = "".join(f"row {i:03d} of the pasted log, with words enough to make a line of it\n" for i in range(1, 201))
MARK = f"[pasted 200 lines, {len(PASTE):,} chars]"
SGR = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def bracketed(text: str) -> str:
    return f"\x1b[200~{text}\x1b[201~"


def spawn(args: list[str], workspace: Path, env: dict[str, str]) -> pexpect.spawn:
    return pexpect.spawn(SCRIBE, args, cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8",
                         timeout=20)


def test_a_long_paste_is_marked_and_sent_whole() -> None:
    pastes = Pastes()
    assert mark_of(PASTE) == MARK
    assert pastes.paste("two\r\nlines", "") == "two\nlines"  # short: as it is, newlines made plain
    line = "look at this: " + pastes.paste(PASTE, "look at this: ") + " and say why"
    assert line == f"look at this: {MARK} and say why"
    assert pastes.sent(line) == f"look at this: {PASTE} and say why"
    assert pastes.last_sent == [PASTE]
    assert pastes.sent(MARK) == MARK  # the pastes start over with each message
    one_long_line = "x" * 5000
    assert pastes.paste(one_long_line, "") == "[pasted 1 lines, 5,000 chars]"


def test_a_recap_shortens_a_long_message() -> None:
    assert message_excerpt("short\nquestion") == "short\nquestion"
    assert message_excerpt(PASTE) == f"row 001 of the pasted log, with words enough to make a line of it … " \
                                     f"[200 lines, {len(PASTE.strip()):,} chars]"


@pytest.mark.slow
def test_a_pasted_message_in_a_terminal(workspace: Path, home: Path) -> None:
    replies = [Reply.text("Read all two hundred rows."), Reply.text("The same rows again.")]
    with FakeMessagesServer(replies) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        child = spawn([], workspace, env)
        try:
            child.expect("›")
            child.send("why these rows? " + bracketed(PASTE))
            child.expect_exact(MARK)
            child.send("\r")
            child.expect("Read all two hundred rows.")
            child.expect("›")
            first_turn = SGR.sub("", child.before)
            # Ctrl-O on an empty line prints what the last message pasted; in the box, puts the
            # text in place of its mark.
            child.sendcontrol("o")
            child.expect("row 200 of the pasted log")
            child.send(bracketed(PASTE))
            child.expect_exact(MARK)
            child.sendcontrol("o")
            child.expect("row 199 of the pasted log")
            child.send("\r")
            child.expect("The same rows again.")
            child.expect("›")
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert "row 150" not in first_turn  # neither the box nor the transcript showed the paste

        again = spawn(["-c"], workspace, env)
        try:
            again.expect("earlier in this session")
            again.expect("The same rows again.")  # the last exchange recapped
            recap = SGR.sub("", again.before)
            again.expect("›")
            again.sendcontrol("d")
            again.expect(pexpect.EOF)
        finally:
            again.close()
    assert "why these rows? row 001 of the pasted log" in recap and "[200 lines, " in recap
    assert "row 002" not in recap and "Read all two hundred rows." in recap
    [log] = session_logs(workspace)
    asked = [e.text for e in events_of(log) if isinstance(e, UserEvent)]
    assert asked == [f"why these rows? {PASTE}", PASTE]
    sent = server.requests[0].json["messages"][-1]["content"]
    assert [block["text"] for block in sent] == [f"why these rows? {PASTE}"]  # to the model, whole
    history = (workspace / ".scribe" / "history").read_text()
    assert "row 150 of the pasted log" in history and "[pasted" not in history
