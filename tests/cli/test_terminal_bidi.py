"""Bidirectional controls and invisible characters from outside are shown, not obeyed: a file
named `invoice\\u202etxt.exe` reads as written in the REPL (the approval question, the command
line, its output, the streamed answer), in `scribe run`'s text output and in `scribe log
show`/`search`, as `invoice<U+202E>txt.exe`; the log keeps the bytes."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from helpers import SCRIBE, events_of, run_scribe, scribe_env, session_logs
from scribe.cli.repl.question import GUARD_S
from scribe.cli.visible import VisibleStream, visible
from scribe.cli.visible_console import VisibleConsole
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, ToolResultEvent, UserEvent

RLO, RLI, PDI, ZWSP = "\u202e", "\u2067", "\u2069", "\u200b"
RAW = (RLO, RLI, PDI, ZWSP)
NAME = f"invoice{RLO}txt.exe"  # reads `invoiceexe.txt` where the override is obeyed
SHOWN_NAME = "invoice<U+202E>txt.exe"
ISOLATED = f"{RLI}שלום 42{PDI} and pay{ZWSP}pal"
SHOWN_ISOLATED = "<U+2067>שלום 42<U+2069> and pay<U+200B>pal"
COMMAND = f"printf '%s\\n' '{NAME}' '{ISOLATED}'"
ANSWER = f"Listed {NAME} and {ISOLATED}."


def script() -> list[Reply]:
    return [Reply([text_block("Listing."), tool_use_block("run_command", {"command": COMMAND})]),
            Reply.text(ANSWER)]


def assert_logged(workspace: Path) -> None:
    events = events_of(session_logs(workspace)[0])
    output = next(e for e in events if isinstance(e, ToolResultEvent)).output
    assert output == f"{NAME}\n{ISOLATED}\n"
    answers = ["".join(b.get("text", "") for b in e.content if b["type"] == "text")
               for e in events if isinstance(e, AssistantEvent)]
    assert answers[-1] == ANSWER
    calls = [b["input"]["command"] for e in events if isinstance(e, AssistantEvent) for b in e.content
             if b["type"] == "tool_use"]
    assert calls == [COMMAND]


def test_visible_marks_bidi_controls_and_invisible_characters() -> None:
    assert visible(NAME) == SHOWN_NAME
    assert visible(ISOLATED) == SHOWN_ISOLATED
    for char in "\u202a\u202b\u202c\u202d\u2066\u2068\u061c\u200c\u200d\u200e\u200f\u2060\ufeff\u2028\u2029\u00ad":
        assert visible(f"a{char}b") == f"a<U+{ord(char):04X}>b"
    assert visible("\U000e0041\U000e0042") == "<U+E0041><U+E0042>"  # tags: text no one sees
    # Emoji keep their joiners: a family, a skin tone, the flag of England.
    for emoji in ("👨\u200d👩\u200d👧", "👩🏽\u200d💻", "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"):
        assert visible(emoji) == emoji
    assert visible("Arabic, Hebrew, accents: مرحبا שלום cafe\u0301") == "Arabic, Hebrew, accents: مرحبا שלום cafe\u0301"
    stream = VisibleStream()
    assert stream.feed("👨\u200d") + stream.feed("👩 a\u200d") + stream.feed("b") + stream.flush() == \
        "👨\u200d👩 a<U+200D>b"


def test_a_visible_console_marks_and_dims_what_reached_it_raw() -> None:
    out = io.StringIO()
    VisibleConsole(file=out, force_terminal=True, color_system="standard", width=100).print(f"name {NAME}")
    assert RLO not in out.getvalue()
    assert "\x1b[2m<U+202E>\x1b[0m" in out.getvalue()  # dim: shown, but not the text itself
    plain = io.StringIO()
    Console(file=plain, width=100).print(visible(NAME))
    assert plain.getvalue() == SHOWN_NAME + "\n"


@pytest.mark.slow
def test_the_repl_question_command_and_output_show_them_marked(workspace: Path, home: Path) -> None:
    """Everything the terminal was sent, from the question to the end of the answer."""
    with FakeMessagesServer(script()) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        log = io.StringIO()
        child = pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=env, dimensions=(40, 160), encoding="utf-8",
                              timeout=20)
        child.logfile_read = log
        try:
            child.expect("›")
            child.send("list them\r")
            child.expect("allow run_command\\?")
            question = log.getvalue()
            time.sleep(GUARD_S + 0.2)
            child.send("y")
            child.expect("Listed")
            child.expect("›")
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    everything = re.sub(r"\x1b\[[0-9;]*m", "", log.getvalue())  # the marks are dim: styles apart
    question = re.sub(r"\x1b\[[0-9;]*m", "", question)
    for raw in RAW:
        assert raw not in everything, repr(raw)
    assert SHOWN_NAME in question  # the command in the approval question
    after = everything[len(question):]
    assert f"│ {SHOWN_NAME}" in after and f"│ {SHOWN_ISOLATED}" in after  # the command's output
    assert f"Listed {SHOWN_NAME} and {SHOWN_ISOLATED}." in after.replace("\r\n", " ")  # the answer
    assert_logged(workspace)


def test_scribe_run_and_log_show_and_search_show_them_marked(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(script()) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "--permission-mode", "full-auto", "list them"], workspace, env)
        assert ran.code == 0, ran.err
        assert f"Listed {SHOWN_NAME} and {SHOWN_ISOLATED}." in ran.out  # the answer, on stdout
        assert SHOWN_NAME in ran.err  # the tool line, on stderr
        shown = run_scribe(["log", "show", "--full"], workspace, env)
        assert shown.code == 0, shown.err
        assert SHOWN_NAME in shown.out and SHOWN_ISOLATED in shown.out
        found = run_scribe(["log", "search", "invoice"], workspace, env)
        assert found.code == 0, found.err
        assert SHOWN_NAME in found.out
        for out in (ran.out, ran.err, shown.out, found.out):
            for raw in RAW:
                assert raw not in out, (repr(raw), out)
    assert_logged(workspace)
    events = events_of(session_logs(workspace)[0])
    assert [e.text for e in events if isinstance(e, UserEvent)] == ["list them"]
