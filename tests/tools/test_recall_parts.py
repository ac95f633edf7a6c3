"""recall reads part of one event: a range of its lines, or its lines that match a pattern with
context, numbered as a preview numbers them, and bounded like every other read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scribe.tools.base import ToolContext
from scribe.tools.recall import MAX_CHARS, MAX_LINES
from scribe.tools.registry import builtin_tools, run_tool

ROWS = "".join(f"{k},item-{k:05d},{k * 3}\n" for k in range(1, 4001))


def recall(records: list[dict[str, Any]], **args: Any) -> tuple[str, bool]:
    ctx = ToolContext(workspace=Path("."), read_log=lambda: iter(records))
    out = run_tool(builtin_tools(), "recall", args, ctx)
    return out.text, out.is_error


LOG = [{"v": 1, "seq": 0, "type": "session"},
       {"v": 1, "seq": 1, "type": "user", "text": "list the rows"},
       {"v": 1, "seq": 2, "type": "tool_result", "tool": "run_command", "tool_use_id": "t", "output": ROWS},
       {"v": 1, "seq": 3, "type": "usage", "purpose": "agent"}]


def test_a_line_range_of_one_output_comes_back_numbered_and_exact() -> None:
    text, error = recall(LOG, seq=2, lines="1233-1235")
    assert not error
    assert text == ("[seq 2] tool_result of run_command (ok), lines 1,233-1,235 of 4,000:\n"
                    "  1233\t1233,item-01233,3699\n  1234\t1234,item-01234,3702\n  1235\t1235,item-01235,3705")
    assert recall(LOG, seq=2, lines="4000")[0].endswith("lines 4,000-4,000 of 4,000:\n  4000\t4000,item-04000,12000")
    # open-ended: to the end, and a range past the end stops there
    assert recall(LOG, seq=2, lines="3999-")[0].splitlines()[1:] == ["  3999\t3999,item-03999,11997",
                                                                    "  4000\t4000,item-04000,12000"]
    assert recall(LOG, seq=2, lines="3999-9000")[0] == recall(LOG, seq=2, lines="3999-")[0]


def test_a_long_range_is_bounded_and_says_where_to_read_on() -> None:
    text, _ = recall(LOG, seq=2, lines="1-4000")
    assert len(text) <= MAX_CHARS + 200
    last_shown = int(text.splitlines()[-2].split("\t")[0])
    assert last_shown <= MAX_LINES
    assert text.splitlines()[-1] == (f"[… lines {last_shown + 1:,}-4,000 not shown: one answer holds at most "
                                     f"{MAX_LINES:,} lines and {MAX_CHARS:,} characters; read on with lines "
                                     f"\"{last_shown + 1}-4000\" …]")
    # reading on from there gives the next lines, no gap and no overlap
    more, _ = recall(LOG, seq=2, lines=f"{last_shown + 1}-4000")
    assert more.splitlines()[1].startswith(f"{last_shown + 1:>6}\t{last_shown + 1},item-")


def test_one_line_longer_than_an_answer_is_cut_and_says_so() -> None:
    log = [{"v": 1, "seq": 4, "type": "tool_result", "tool": "web_fetch", "tool_use_id": "w",
            "output": "z" * (MAX_CHARS * 2) + "\nend"}]
    text, error = recall(log, seq=4, lines="1-2")
    assert not error and len(text) < MAX_CHARS + 200
    assert text.splitlines()[-1] == f"[… line 1 is cut at {MAX_CHARS:,} characters of answer …]"


def test_the_lines_of_one_event_that_match_come_with_context_as_grep_shows_them() -> None:
    text, error = recall(LOG, seq=2, query=r"^(1234|1236|1300),")
    assert not error
    assert text == (
        "[seq 2] tool_result of run_command (ok): 3 of its 4,000 lines match '^(1234|1236|1300),', "
        "with 2 lines of context:\n"
        "  1232-1232,item-01232,3696\n  1233-1233,item-01233,3699\n  1234:1234,item-01234,3702\n"
        "  1235-1235,item-01235,3705\n  1236:1236,item-01236,3708\n  1237-1237,item-01237,3711\n"
        "  1238-1238,item-01238,3714\n--\n"
        "  1298-1298,item-01298,3894\n  1299-1299,item-01299,3897\n  1300:1300,item-01300,3900\n"
        "  1301-1301,item-01301,3903\n  1302-1302,item-01302,3906")
    # within a range of lines only, and without context when none is around
    assert recall(LOG, seq=2, query="item-0123", lines="1-100")[0] == (
        "[seq 2] tool_result of run_command (ok): no line of lines 1-100 matches 'item-0123'")
    assert recall(LOG, seq=2, query="^1,", lines="1-2")[0] == (
        "[seq 2] tool_result of run_command (ok): 1 of lines 1-2 matches '^1,', with 2 lines of context:\n"
        "     1:1,item-00001,3\n     2-2,item-00002,6")


def test_seq_alone_reads_the_event_whole_and_mistakes_are_one_clear_line() -> None:
    assert recall(LOG, seq=1)[0] == "[seq 1] user:\nlist the rows"
    cases = {
        (("seq", 2), ("lines", "9-3")): "lines 9-3 is not a range of lines (they are numbered from 1, first to last)",
        (("seq", 2), ("lines", "5000")): "event 2 has 4,000 lines: line 5,000 is past its end",
        (("seq", 2), ("lines", "the end")): 'lines must be first-last, as "1500-1600" (got "the end")',
        (("lines", "1-2"),): "lines reads part of one event: give its seq too",
        (("seq", 2), ("seq_from", 1)): "give seq (one event) or seq_from/seq_to (a range of events), not both",
        (("seq", 3), ("lines", "1")): "no event 3 to read in this session's log",
        (("seq", 9),): "no event 9 to read in this session's log",
    }
    for args, message in cases.items():
        assert recall(LOG, **dict(args)) == (message, True), args


@pytest.mark.parametrize("lines", ["1-2", "2"])
def test_the_numbers_are_those_a_preview_gives_even_with_carriage_returns(lines: str) -> None:
    """Lines are cut as str.splitlines cuts them, in the preview and in recall alike."""
    log = [{"v": 1, "seq": 5, "type": "tool_result", "tool": "run_command", "tool_use_id": "c",
            "output": "one\r\ntwo\rthree\n"}]
    text, _ = recall(log, seq=5, lines=lines)
    assert text.splitlines()[-1] == "     2\ttwo"
