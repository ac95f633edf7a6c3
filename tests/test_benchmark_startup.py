"""The start-up benchmark's scripted coding session (benchmarks/coding_session.py) and where its
report lands on docs/performance.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import benchmarks.__main__ as runner
from benchmarks.coding_session import CLAUDE_CODE, SCRIBE, CodingModel, answer_for, module_for, prompt_for
from scribe.fakeapi import Reply


def _texts(reply: Any) -> str:
    assert isinstance(reply, Reply)
    return " ".join(b.get("text", "") for b in reply.blocks if b["type"] == "text")


def _tool_uses(reply: Any) -> list[dict[str, Any]]:
    assert isinstance(reply, Reply)
    return [b for b in reply.blocks if b["type"] == "tool_use"]


def _numbered(text: str, width: int = 0) -> str:
    return "\n".join(f"{n:>{width}}\t{line}" for n, line in enumerate(text.split("\n"), start=1))


def _play(model: CodingModel, tools: list[dict[str, Any]], results: list[str]) -> list[Any]:
    """Step 3 as an agent plays it: the prompt, then each answer's tool call answered in turn
    with the next of `results`. Claude Code's way: a system message after the first one."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>\nToday is a day.\n</system-reminder>"},
                                     {"type": "text", "text": prompt_for(3)}]},
        {"role": "system", "content": "Available agent types: ..."},
    ]
    replies = [model({"tools": tools, "messages": messages})]
    for result in results:
        used = _tool_uses(replies[-1])
        assert len(used) == 1
        messages += [{"role": "assistant", "content": replies[-1].blocks},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": used[0]["id"],
                                                   "content": result}]}]
        replies.append(model({"tools": tools, "messages": messages}))
    return replies


def _tools(names: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in (*names, "Other")]


@pytest.mark.parametrize(("dialect", "read_back"), [
    # Claude Code numbers the empty line after the file's last newline too
    pytest.param(CLAUDE_CODE, _numbered(module_for(3)), id="claude-code"),
    # scribe's read_file numbers lines as `cat -n` does
    pytest.param(SCRIBE, _numbered(module_for(3).rstrip("\n"), width=6), id="scribe"),
])
def test_a_turn_is_done_when_the_run_and_the_read_back_come_back_right(
        dialect: Any, read_back: str, tmp_path: Path) -> None:
    model = CodingModel({"claude": tmp_path, "scribe": tmp_path})
    tools = _tools((dialect.write, dialect.run, dialect.read))
    replies = _play(model, tools, ["File created.", "square of 3 is 9", read_back])
    assert [u["name"] for r in replies[:3] for u in _tool_uses(r)] == [dialect.write, dialect.run, dialect.read]
    assert _tool_uses(replies[0])[0]["input"][dialect.path_key] == dialect.path(tmp_path, "step_03.py")
    assert _texts(replies[-1]) == answer_for(3)
    assert model.calls[f"{dialect.name} agent"] == 4


@pytest.mark.parametrize("results", [
    pytest.param(["File created.", "python3: can't open file 'step_03.py'", "1\tdef square"], id="run-failed"),
    pytest.param(["File created.", "square of 3 is 9", _numbered(module_for(3)) + "\n8\textra = 1"],
                 id="file-differs"),
])
def test_a_turn_whose_work_did_not_come_back_right_is_not_done(results: list[str], tmp_path: Path) -> None:
    model = CodingModel({"claude": tmp_path})
    replies = _play(model, _tools(("Write", "Bash", "Read")), results)
    assert _texts(replies[-1]) != answer_for(3) and "did not check out" in _texts(replies[-1])


def test_scribe_memory_side_calls_are_answered_as_side_calls_even_with_the_agent_tools(tmp_path: Path) -> None:
    model = CodingModel({"scribe": tmp_path})
    request = {"tools": _tools(("write_file", "run_command", "read_file")), "tool_choice": {"type": "tool", "name": "record_notes"},
               "system": [{"type": "text", "text": "You are the Curator of a coding project's notes."}],
               "messages": [{"role": "user", "content": "Notes:\n\nWhat session s1 taught:\n[s1#2] tests use make"}]}
    reply = model(request)
    assert _tool_uses(reply)[0]["name"] == "record_notes"
    assert model.calls == {"scribe curator": 1}


def test_each_suite_writes_its_own_block_and_leaves_every_other_figure_standing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "performance.md"
    page.write_text("# P\n<!-- benchmarks:begin -->\n<!-- benchmarks:costs:begin -->\nold costs\n"
                    "<!-- benchmarks:costs:end -->\n<!-- benchmarks:end -->\n"
                    "## Start-up\n<!-- benchmarks:startup:begin -->\nold start-up\n<!-- benchmarks:startup:end -->\n")
    monkeypatch.setattr(runner, "PAGE", page)
    runner.write_page("Measured now.", {"startup": "new start-up"})
    text = page.read_text()
    assert "old costs" in text and "old start-up" not in text and "Measured now.\n\nnew start-up" in text
    # a suite the page has no block for gets one inside the main block; the others stay
    runner.write_page("Measured later.", {"watcher": "new watcher", "startup": "newer start-up"})
    text = page.read_text()
    assert "old costs" in text
    assert ("<!-- benchmarks:watcher:begin -->\nMeasured later.\n\nnew watcher\n<!-- benchmarks:watcher:end -->\n"
            "<!-- benchmarks:end -->") in text
    assert "Measured later.\n\nnewer start-up\n<!-- benchmarks:startup:end -->" in text
    runner.write_page("Measured last.", {"watcher": "newest watcher"})
    text = page.read_text()
    assert text.count("benchmarks:watcher:begin") == 1 and "new watcher" not in text and "old costs" in text
