"""The sub-agent benchmark (benchmarks/subagents.py): its generated workspace, its scripted model
answering from what it was sent, and a small run of the whole suite through `scribe run`."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from benchmarks.subagents import (
    OPENS,
    Opener,
    ReadingModel,
    measure,
    modules,
    said,
    section,
)
from scribe.agent.session.instructions import SUBAGENT_GUIDANCE
from scribe.fakeapi import Reply

PARENT_TOOLS = [{"name": n, "description": n, "input_schema": {"type": "object"}}
                for n in ("read_file", "list_files", "task")]


def numbered(lines: list[str], first: int = 1) -> str:
    """Lines as read_file shows them: `cat -n`'s number, a tab, the line."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))


def uses(reply: Any) -> list[dict[str, Any]]:
    assert isinstance(reply, Reply)
    return [b for b in reply.blocks if b["type"] == "tool_use"]


def text(reply: Any) -> str:
    assert isinstance(reply, Reply)
    return "".join(b.get("text", "") for b in reply.blocks if b["type"] == "text")


def request(system: str, asked: str, turns: list[tuple[list[dict[str, Any]], list[str]]],
            tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A request whose turn so far is `asked`, then each answer's tool calls and their results."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": asked}]}]
    for calls, results in turns:
        messages.append({"role": "assistant", "content": calls})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": c["id"], "content": r}
                                                     for c, r in zip(calls, results, strict=True)]})
    return {"system": [{"type": "text", "text": system}], "messages": messages, "tools": tools or PARENT_TOOLS}


def test_the_workspace_is_thirty_modules_of_a_few_hundred_lines_with_openers_and_lookups() -> None:
    files = modules()
    assert len(files) == 30 and len({m.path for m in files}) == 30
    for module in files:
        ast.parse("\n".join(module.lines))  # valid Python
        assert 150 <= len(module.lines) <= 520
        for opener in module.openers:
            assert OPENS.search(module.lines[opener.line - 1])
    openers = [o for m in files for o in m.openers]
    looking = [m for m in files if not m.openers and any("socket." in line for line in m.lines)]
    assert len(openers) >= 7 and looking  # some only look names up: a search for "socket" is not the answer
    assert len({len(m.lines) for m in files}) > 20  # varied sizes


def test_a_sub_agent_reads_what_its_prompt_names_then_answers_from_the_lines_it_was_sent() -> None:
    module = next(m for m in modules() if m.openers)
    others = [m.path for m in modules() if m is not module][:5]
    asked = "Read each of these files whole with read_file:\n" + "\n".join(f"- {p}" for p in [module.path, *others])
    model = ReadingModel(call_s=0)
    first = uses(model(request(SUBAGENT_GUIDANCE, asked, [])))
    assert [u["input"]["path"] for u in first] == [module.path, *others[:4]]
    second = uses(model(request(SUBAGENT_GUIDANCE, asked, [(first, ["(empty)"] * 5)])))
    assert [u["input"]["path"] for u in second] == others[4:]
    # the file as it was sent, three lines longer at the top than the generator wrote it
    shown = numbered(["# a", "# b", "# c", *module.lines])
    reply = model(request(SUBAGENT_GUIDANCE, asked, [(first, [shown, *["(empty)"] * 4]), (second, ["(empty)"])]))
    assert said(text(reply)) == {Opener(o.path, o.line + 3, o.function) for o in module.openers}


def test_the_parent_lists_then_hands_the_files_to_three_sub_agents_at_once_or_reads_them_itself() -> None:
    files = [m.path for m in modules()]
    model = ReadingModel(call_s=0)
    listing = uses(model(request("You are scribe.", "which open a socket?", [])))
    assert [u["name"] for u in listing] == ["list_files"]
    listed = "\n".join(files)
    tasks = uses(model(request("You are scribe.", "which open a socket?", [(listing, [listed])])))
    assert [u["name"] for u in tasks] == ["task"] * 3
    shares = [[line[2:] for line in u["input"]["prompt"].splitlines() if line.startswith("- ")] for u in tasks]
    assert [len(s) for s in shares] == [10, 10, 10] and sum(shares, []) == files
    # the answer is the sub-agents' findings, as their results said them
    found = ["src/harbor/a.py:12 open_a", "none", "src/harbor/c.py:7 dial_c\nsrc/harbor/c.py:90 reach_c"]
    final = model(request("You are scribe.", "which open a socket?", [(listing, [listed]), (tasks, found)]))
    assert said(text(final)) == {Opener("src/harbor/a.py", 12, "open_a"), Opener("src/harbor/c.py", 7, "dial_c"),
                                 Opener("src/harbor/c.py", 90, "reach_c")}
    # without the task tool it reads the files itself, five per answer
    alone = [t for t in PARENT_TOOLS if t["name"] != "task"]
    reads = uses(model(request("You are scribe.", "which open a socket?", [(listing, [listed])], alone)))
    assert [u["name"] for u in reads] == ["read_file"] * 5
    assert model.calls == {"parent": 4, "child": 0}


@pytest.mark.slow
def test_a_small_run_reports_both_ways_through_scribe_run() -> None:
    data = measure(count=6, runs=1, call_s=0)
    without, with_ = data["without"], data["with"]
    assert data["files"] == 6 and data["openers"] >= 1
    assert without["right"] is True and with_["right"] is True
    assert without["children"] == 0 and without["calls"]["sub-agents"] == 0
    assert with_["children"] == 3 and with_["calls"]["sub-agents"] >= 6  # each reads, then answers
    # the parent that handed the files on never held them, and each sub-agent held only its share
    assert with_["parent_peak"] < without["parent_peak"] and 0 < with_["child_peak"] < without["parent_peak"]
    for way in (without, with_):
        # `scribe log stats` of the parent, its sub-agents folded in, is what the fake API billed
        assert way["usd"] == pytest.approx(way["billed_usd"], abs=5e-6)
        assert way["rejected"] == 0 and way["left_running"] == 0
    report = section(data)
    assert report.startswith("### One task, 6 files read, with and without sub-agents")
    assert "| the parent's peak context (tokens) |" in report
    assert report.count("| answer names every function, and only those | yes | yes |") == 1
