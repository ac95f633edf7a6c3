"""The real `scribe` in a real terminal emulator (tmux): what ends up in the scrollback when a
streamed answer holds wide, combining and skin-tone characters and the pane is resized while
it streams, and how bidirectional controls and invisible characters look on the screen."""

from __future__ import annotations

import io
import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.markdown import Markdown

from helpers import SCRIBE, scribe_env
from pane import TmuxPane
from scribe.cli.repl.excerpts import MarkdownTail, complete_blocks
from scribe.cli.repl.live import FittedLiveRender, Unpadded, rows_taken, terminal_cells
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, ScriptItem, tool_use_block

# Paragraphs of about a hundred cells, each with a token (L01…) found nowhere else: wide CJK,
# combining accents, skin-tone and joined emoji, and plain words.
PARAGRAPHS = [
    "L01 wide characters 漢字のテキストと中文字符 stand two cells each in every terminal that draws them here.",
    "L02 thumbs 👍🏽 up with a skin tone, 👋🏿 a wave and 👩🏽‍💻 at work, counted differently by rich and tmux.",
    "L03 combining marks: cafe\u0301, nai\u0308ve, Zo\u0308e and n\u0303 sit on the letter before them, no cell of their own.",
    "L04 plain words only, long enough to wrap at fifty columns and at thirty, and again at thirty once more.",
    "L05 more wide text 한국어 문장과 日本語の文 between Latin words, so wrapping falls between the wide ones too.",
    "L06 👍🏽👍🏽👍🏽 three thumbs in a row and 🏳️‍🌈 a flag, then words to fill the line out to its full width.",
    "L07 a last paragraph of plain words, which is the one the stream ends on when the answer completes now.",
]
ANSWER = "\n\n".join(PARAGRAPHS)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[TmuxPane]:
    pane = TmuxPane(tmp_path / "tmux.sock")
    try:
        yield pane
    finally:
        pane.stop()


def in_pane(workspace: Path, env: dict[str, str], args: str = "") -> str:
    # A size exported for a terminal of another size, as some wrappers (and tmux started
    # without one) leave it: the terminal's own size must win, or a resize garbles the screen.
    env = {**env, "COLUMNS": "80", "LINES": "24"}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k != "TERM")
    return f"cd {shlex.quote(str(workspace))} && env {exports} {SCRIBE} {args}"


def memory_or(items: Iterator[ScriptItem]) -> Any:
    def answer(request: dict[str, Any]) -> ScriptItem:
        if not request.get("tools"):  # memory compression calls carry no tools
            return Reply.text("🔴 the user asked for a long answer")
        return next(items)
    return answer


@pytest.mark.parametrize("width", [120, 50, 30])
def test_each_live_line_fits_the_width_by_either_count_and_is_not_padded(width: int) -> None:
    out = io.StringIO()
    console = Console(file=out, width=width, height=60, force_terminal=True, color_system=None)
    area = FittedLiveRender(console, MarkdownTail(ANSWER, 40))
    console.print(area, end="")
    drawn = out.getvalue().split("\n")
    assert len(drawn) == len(area._drawn) > len(PARAGRAPHS)
    for line in drawn:
        assert line.endswith("\x1b[K")  # erased to the end of the line, not padded
        text = line.removesuffix("\x1b[K")
        assert text == text.rstrip(" ")
        assert terminal_cells(text) <= width - 1  # never the last column, whoever counts
    assert "👍🏽" in out.getvalue() and "漢字" in out.getvalue()
    # after a resize to a third of the width, a redraw goes up the rows the lines take now
    console.width = max(width // 3, 10)
    rows = rows_taken(area._drawn, console.width)
    assert rows > len(drawn) or width == 30 and rows >= len(drawn)
    assert area.position_cursor().segment.text == "\r\x1b[2K" + "\x1b[A\x1b[2K" * (rows - 1)
    assert terminal_cells("👍🏽") == 4 and terminal_cells("漢") == 2 and terminal_cells("e\u0301") == 1


def test_a_streamed_answer_is_printed_block_by_block_as_blocks_complete() -> None:
    text = "para one\n\npara two\n\n```\ncode\n\nmore code\n```\n\n1. item\n\n   its second paragraph\n\nlast"
    done = complete_blocks(text)
    assert text[:done].endswith("its second paragraph\n\n") and text[done:] == "last"
    assert complete_blocks("para one\n\n") == 0  # what follows may still continue a list item
    assert complete_blocks("para one\n\n   indented") == 0
    assert complete_blocks("```\ncode\n\nstill code") == 0  # a blank line in a fence ends nothing
    assert complete_blocks("a\n\nb\n\nc", start=3) == 6


@pytest.mark.parametrize("markdown", [Markdown("👍🏽 " * 20), Markdown("| a | b |\n|---|---|\n| 漢字 | 👋🏿 |")])
def test_a_printed_answer_is_not_padded(markdown: Markdown) -> None:
    out = io.StringIO()
    Console(file=out, width=50, force_terminal=True, color_system=None).print(Unpadded(markdown))
    assert all(line == line.rstrip(" ") for line in out.getvalue().splitlines())


@pytest.mark.slow
def test_a_resize_while_an_answer_streams_leaves_each_line_once(workspace: Path, home: Path, tmux: TmuxPane) -> None:
    # The stream stops half-way for long enough to resize the pane, then the server hangs up;
    # the retried call sends the same answer, which the REPL continues from where it was.
    stalled = Fault(kind="stall", after_events=30, hang_s=7, reply=Reply.text(ANSWER))
    with FakeMessagesServer(memory_or(iter([stalled, Reply.text(ANSWER)]))) as server:
        tmux.start(in_pane(workspace, scribe_env(server.base_url, home)), 120, 40)
        tmux.wait("›")
        tmux.keys("write the paragraphs")
        tmux.wait("L03")  # streaming, half-way: the stall holds it there
        for width in (50, 120, 30, 50, 120):
            tmux.resize(width)
            time.sleep(1.2)  # several redraws of the live area at this width
        tmux.wait("L07 a last", seconds=30)
        tmux.wait("›")
        shown = tmux.scrollback()
    for paragraph in PARAGRAPHS:
        token = paragraph[:3]
        assert shown.count(token) == 1, f"{token} is shown {shown.count(token)} times:\n{shown}"
    assert shown.count("write the paragraphs") == 1


LONG = "  # a comment long enough that this line of code wraps in a narrow terminal"
CODE = "".join(f"def f{i}(x):\n    return x + {i}{LONG}\n" for i in range(6))


def edits(request: dict[str, Any]) -> ScriptItem:
    """Two edits of calc.py, one question each, then done."""
    if not request.get("tools"):
        return Reply.text("🔴 the user asked for edits")
    results = sum(1 for m in request["messages"] if isinstance(m["content"], list)
                  for b in m["content"] if b.get("type") == "tool_result")
    if results == 2:
        return Reply.text("done editing")
    n = 3 + results
    return Reply([tool_use_block("edit_file", {"path": "calc.py", "old_text": f"    return x + {n}{LONG}\n",
                                               "new_text": f"    return x + {n}{n}{LONG}, changed\n"})])


@pytest.mark.slow
def test_a_narrowed_terminal_shows_the_question_once_and_wraps_a_diff_under_its_code(
        workspace: Path, home: Path, tmux: TmuxPane) -> None:
    (workspace / "calc.py").write_text(CODE)
    with FakeMessagesServer(edits) as server:
        tmux.start(in_pane(workspace, scribe_env(server.base_url, home)), 100, 40)
        tmux.wait("›")
        tmux.keys("edit calc.py")
        tmux.wait("allow edit_file?")
        time.sleep(1)
        tmux.resize(45)  # while the question is up: it is drawn again at the new width
        time.sleep(1.5)
        narrowed = tmux.screen()
        tmux.type("n")
        tmux.wait("return x + 44")  # the second question's diff, printed at 45 columns
        tmux.wait("allow edit_file?")
        time.sleep(1)
        second = tmux.screen().split("return x + 33")[-1]
        tmux.type("n")
        tmux.wait("done editing")
    assert narrowed.count("allow edit_file?") == 1, narrowed
    rows = second.splitlines()
    starts = [i for i, row in enumerate(rows) if row.lstrip().startswith(("-    return x + 4", "+    return x + 44"))]
    assert len(starts) == 2, second
    for i in starts:  # each long diff line goes on under its code, not at the left edge
        assert rows[i + 1].startswith(" " * 9) and rows[i + 1].strip(), second
