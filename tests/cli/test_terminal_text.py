"""Text from outside cannot drive the terminal: control characters in tool output, file
contents, model text, file names and tool arguments reach the screen as visible text, in the
REPL, in `scribe run`'s text output and in `scribe log show`; the log keeps the bytes."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from helpers import events_of, run_scribe, scribe_env, session_logs
from repl_driver import open_repl
from scribe.cli.repl.view import View
from scribe.cli.visible import VisibleStream, visible
from scribe.cli.visible_console import VisibleConsole
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, ToolResultEvent
from scribe.settings.values import load_settings

CLEAR, RED, BEL = "\x1b[2J", "\x1b[31m", "\x07"
OSC52 = "\x1b]52;c;cGF3bmVk\x07"  # writes "pawned" to the clipboard
TITLE = "\x1b]0;owned\x07"  # sets the window title
CSI8 = "\x9b31m"  # the one-byte (C1) CSI
# What a command prints, what the model says, and the name of a file it writes.
OUTPUT = f"{CLEAR}{RED}RED{BEL} clip {OSC52} csi {CSI8} cr\rend"
ANSWER = f"All done {TITLE}and {CLEAR}cleared."
NAME = "evil\x1b[8mhidden.txt"
# (the C1 CSI as UTF-8, as a program writing text would print it)
COMMAND = f"printf '{OUTPUT}'".replace("\x1b", "\\033").replace("\x07", "\\007").replace(
    "\x9b", "\\302\\233").replace("\r", "\\r")
RAW = (CLEAR, RED, BEL, "\x1b]", "\x9b", "\x1b[8m")  # none of these may reach the screen as they are


def script() -> list[Reply]:
    return [
        Reply([text_block(f"Running {RED}it."), tool_use_block("run_command", {"command": COMMAND}),
               tool_use_block("write_file", {"path": NAME, "content": f"file {CLEAR}content\n"})]),
        Reply.text(ANSWER),
    ]


def assert_shown(screen: str) -> None:
    for raw in RAW:
        assert raw not in screen, (raw, screen)
    assert "\\x1b[2J\\x1b[31mRED\\x07 clip \\x1b]52;c;cGF3bmVk\\x07 csi \\x9b31m cr\\rend" in screen, screen
    assert "evil\\x1b[8mhidden.txt" in screen  # the file name, in the tool line
    assert "\\x1b]0;owned\\x07and \\x1b[2Jcleared." in screen  # the answer


def assert_logged(workspace: Path) -> None:
    """The log keeps every byte as it came."""
    events = events_of(session_logs(workspace)[0])
    command = next(e for e in events if isinstance(e, ToolResultEvent) and e.tool == "run_command")
    assert command.output.startswith(OUTPUT)
    answers = ["".join(b.get("text", "") for b in e.content) for e in events if isinstance(e, AssistantEvent)]
    assert answers[-1] == ANSWER
    assert (workspace / NAME).read_text() == f"file {CLEAR}content\n"


def test_visible_shows_every_control_character_but_newline_and_tab() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible(f"{CLEAR}x{BEL}") == "\\x1b[2Jx\\x07"
    assert visible(OSC52) == "\\x1b]52;c;cGF3bmVk\\x07"
    assert visible("\x00\x08\x0b\x0c\x7f\x85\x9f") == "\\x00\\x08\\x0b\\x0c\\x7f\\x85\\x9f"
    assert visible("over\rwrite, line\r\nnext") == "over\\rwrite, line\nnext"  # a lone CR; CRLF is a newline
    assert visible("ünïcödé ✓ \u00a0") == "ünïcödé ✓ \u00a0"  # printable text is untouched
    stream = VisibleStream()
    assert stream.feed("one\r") + stream.feed("\ntwo\r") + stream.feed("x") + stream.flush() == "one\ntwo\\rx"


@pytest.mark.parametrize("renderable", [Text(OUTPUT, style="bold"), Markdown("**bold** " + OUTPUT)])
def test_a_visible_console_catches_what_slipped_past(renderable: Text | Markdown) -> None:
    """What rich lets through (ESC, C1, NUL, DEL) is written out visibly; rich's own styles stay."""
    out = io.StringIO()
    VisibleConsole(file=out, force_terminal=True, color_system="standard", width=200).print(renderable)
    screen = out.getvalue()
    assert CLEAR not in screen and "\x9b" not in screen and "\x1b]52" not in screen
    assert "\\x1b[2J" in screen and "\\x9b31m" in screen
    assert "\x1b[1m" in screen  # rich's own style codes are still there


@pytest.mark.parametrize("terminal", [False, True], ids=["plain", "terminal"])
def test_the_repl_shows_control_characters_visibly(workspace: Path, home: Path, terminal: bool,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("SCRIBE_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("SCRIBE_CURATE_NOTES", "false")
    out = io.StringIO()
    # terminal: a live area and markdown, as on a real terminal (no colour, so that every escape
    # left is one the live area moves the cursor with); plain: streamed text as it came
    console = Console(file=out, width=200, force_terminal=terminal, color_system=None)
    with FakeMessagesServer(script()) as server, create_pipe_input() as pipe, \
            create_app_session(input=pipe, output=DummyOutput()):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        pipe.send_text("go\r/log 4\r\x04")
        settings = load_settings(workspace, {"permission_mode": "full-auto", "max_retries": 0})
        with open_repl(workspace, settings, View(console)) as repl:
            repl.loop()
    screen = out.getvalue()
    if terminal:  # the live area's own cursor movements are escapes too, and not from outside
        screen = re.sub(r"\x1b\[(?:\?25[lh]|[0-9]*A|2K)", "", screen).replace("\r", "")
    assert_shown(screen)
    assert_logged(workspace)


def test_scribe_run_and_log_show_show_control_characters_visibly(workspace: Path, home: Path) -> None:
    with FakeMessagesServer(script()) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "--permission-mode", "full-auto", "go"], workspace, env)
        assert ran.code == 0, ran.err
        assert "\\x1b]0;owned\\x07and \\x1b[2Jcleared." in ran.out  # the answer, on stdout
        for raw in RAW:
            assert raw not in ran.out and raw not in ran.err, raw
        assert "evil\\x1b[8mhidden.txt" in ran.err  # the tool line, on stderr
        shown = run_scribe(["log", "show", "--full"], workspace, env)
        assert shown.code == 0, shown.err
        assert_shown(shown.out)
        tail = run_scribe(["log", "tail", "-n", "5", "--full"], workspace, env)
        assert tail.code == 0 and "\\x1b]0;owned" in tail.out and "\x1b]0" not in tail.out
    assert_logged(workspace)
