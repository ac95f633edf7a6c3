"""A long tool output enters the prompt as a preview: its head (and tail, for a command), its
size, its seq and how to recall the rest; what the model asked for in full stays whole; a
session from before previews renders as it always did."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import session_header
from scribe.context.preview import OutputView, Settled, elide, preview
from scribe.context.render import render
from scribe.log.events import AssistantEvent, Event, ObservationEvent, ToolResultEvent, UserEvent

ROWS = "".join(f"row {k}: value {k * 7}\n" for k in range(1, 4001))


def result(tool: str, output: str, seq: int = 4) -> ToolResultEvent:
    return ToolResultEvent(seq=seq, ts="t", tool_use_id="t", tool=tool, output=output)


def session(tool: str, output: str, **config: object) -> list[Event]:
    return [session_header(config=dict(config)), UserEvent(seq=1, ts="t", text="go"),
            AssistantEvent(seq=2, ts="t", content=[{"type": "tool_use", "id": "t", "name": tool, "input": {}}],
                           stop_reason="tool_use"),
            result(tool, output, seq=3)]


def shown(events: list[Event]) -> str:
    content = render(events).messages[-1]["content"][0]["content"]
    assert isinstance(content, str)
    return content


def test_a_command_output_shows_its_head_and_tail_its_size_seq_and_how_to_read_on() -> None:
    text = shown(session("run_command", ROWS, preview_chars=2000))
    lines = text.splitlines()
    assert lines[0] == (
        "[run_command output: 4,000 lines, 85,308 characters; shown here: lines 1-45 and 3,946-4,000. The whole "
        "output is event 3 of this session's log: recall {\"seq\": 3, \"lines\": \"46-145\"} reads lines of it, "
        "recall {\"seq\": 3, \"query\": \"...\"} finds lines in it.]")
    assert lines[1:46] == ROWS.splitlines()[:45]
    assert lines[46] == "[… lines 46-3,945 not shown …]"
    assert lines[47:] == ROWS.splitlines()[3945:]
    assert len(text) < 2000 + len(lines[0]) + 40
    assert "row 1234:" not in text


def test_a_page_a_listing_or_an_mcp_answer_shows_its_head() -> None:
    for tool in ("web_fetch", "list_files", "mcp__notes__find"):
        text = shown(session(tool, ROWS, preview_chars=1000))
        assert text.startswith(f"[{tool} output: 4,000 lines, 85,308 characters; shown here: lines 1-")
        assert text.splitlines()[-1].startswith("[… lines ") and text.rstrip().endswith("4,000 not shown …]")
        assert "row 4000:" not in text and len(text) < 1400


def test_what_the_model_asked_for_in_full_is_shown_whole_until_its_turn_settles() -> None:
    """A file read holds the exact lines an edit is made from (read_file bounds it); a recall
    answer is what was asked to be read back (recall bounds it)."""
    for tool in ("read_file", "recall"):
        assert shown(session(tool, ROWS, preview_chars=500)) == ROWS
        settled = OutputView(500).text(result(tool, ROWS), Settled(before=9, chars=300))
        assert settled.startswith(f"[{tool} output: 4,000 lines") and len(settled) < 700


def test_an_output_whose_preview_would_not_be_shorter_is_shown_whole() -> None:
    text = "x\n" * 1001  # over the size, but a preview with its note would be longer than this
    assert OutputView(2000).text(result("run_command", text)) == text
    assert OutputView(2000).text(result("run_command", "")) == "(no output)"


def test_one_enormous_line_is_cut_to_its_beginning() -> None:
    text = "{" + "\"k\": 1, " * 5000 + "}"
    out = preview(text, 800, 7, "mcp__api__get")
    assert out.splitlines()[0].startswith("[mcp__api__get output: 1 line, 40,002 characters; shown here: the first "
                                          "800 characters of line 1.")
    assert out.splitlines()[1] == text[:800] and out.splitlines()[2] == "[… the rest of line 1 not shown …]"


def test_a_session_recorded_before_previews_renders_as_it_always_did() -> None:
    """No preview_chars in its config: head and tail at render_output_chars, with the marker it
    was sent with, so its cached prefix and `log prompt --at` stay what they were."""
    old = shown(session("run_command", ROWS, render_output_chars=6000))
    assert old == elide(ROWS, 6000, 3)
    assert "elided; recall(seq_from=3, seq_to=3) returns the whole output" in old
    assert shown(session("read_file", ROWS, render_output_chars=6000)) == elide(ROWS, 6000, 3)
    assert shown(session("run_command", ROWS)) == elide(ROWS, 12_000, 3)  # before the setting was recorded


def test_the_preview_size_is_the_sessions_recorded_one() -> None:
    small, large = shown(session("run_command", ROWS, preview_chars=500)), shown(session("run_command", ROWS,
                                                                                       preview_chars=8000))
    assert len(small) < 900 < 8000 < len(large) < 8500


def test_a_chunk_shortens_the_outputs_of_turns_that_had_ended_and_no_others() -> None:
    events = session("run_command", ROWS, preview_chars=4000, settled_output_chars=600)
    events += [AssistantEvent(seq=4, ts="t", content=[{"type": "text", "text": "done"}], stop_reason="end_turn"),
               UserEvent(seq=5, ts="t", text="next")]
    before = shown(events[:4])
    events.append(ObservationEvent(seq=6, ts="t", text="🟡 listed rows", seq_from=1, seq_to=1, tokens=3, model="h"))
    after = next(b["content"] for m in render(events).messages for b in m["content"] if b["type"] == "tool_result")
    assert len(before) > 4000 > 1000 > len(after)
    assert after.startswith("[run_command output: 4,000 lines, 85,308 characters; shown here: lines 1-")


# Lines without a character str.splitlines cuts at: the test splits the preview's body itself.
BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
lines = st.lists(st.text(st.characters(codec="utf-8", exclude_characters=BREAKS), max_size=60), min_size=1, max_size=80)


@settings(max_examples=300, deadline=None)
@given(lines, st.sampled_from(["\n", "\r\n"]), st.integers(200, 3000), st.sampled_from(["head", "head_and_tail"]))
def test_a_preview_shows_only_exact_lines_of_the_output_at_the_numbers_it_names(
        parts: list[str], end: str, chars: int, shape: str) -> None:
    text = end.join(parts) + end
    out = preview(text, chars, 11, "run_command", shape)  # type: ignore[arg-type]
    if out == text:
        return
    assert len(out) < len(text)
    original = text.splitlines()
    note, *body = out.split("\n")
    match = re.match(r"^\[run_command output: ([\d,]+) lines?, ([\d,]+) characters; shown here: (.*?)\. The whole "
                     r"output is event 11 of this session's log: recall \{\"seq\": 11, \"lines\": \"(\d+)-(\d+)\"\} "
                     r"reads lines of it, recall \{\"seq\": 11, \"query\": \"\.\.\.\"\} finds lines in it\.\]$", note)
    assert match, note
    assert int(match.group(1).replace(",", "")) == len(original) and int(match.group(2).replace(",", "")) == len(text)
    gap = next(i for i, line in enumerate(body) if line.startswith("[… ") and line.endswith(" not shown …]"))
    head, tail = body[:gap], body[gap + 1:]
    if tail and tail[-1] == "":
        tail.pop()
    first_missing = int(match.group(4))
    if "the first" in match.group(3):  # one line too long to show whole: its beginning
        assert original[0].startswith(head[0]) and first_missing == 1
    else:
        assert [h.rstrip("\r") for h in head] == original[:first_missing - 1]
    if tail:
        assert shape == "head_and_tail"
        assert [t.rstrip("\r") for t in tail] == original[len(original) - len(tail):]
