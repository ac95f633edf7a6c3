"""docs/api.md's examples, run as written against the fake Messages API in a real workspace: the
page shows what works."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from helpers import as_a_person
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, tool_use_block

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
EXAMPLES = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


def model(request: dict[str, Any]) -> Any:
    """Answers as a model would, by what it was asked: lists files with a command, tells a story
    that freezes midway (for the cancel), and otherwise says what the repository holds."""
    last = request["messages"][-1]["content"]
    if any(block.get("type") == "tool_result" for block in last):
        return Reply.text("README.md is the only file.")
    asked = " ".join(block.get("text", "") for block in last if block.get("type") == "text")
    if "List the files" in asked:
        return Reply([tool_use_block("run_command", {"command": "ls"})])
    if "long story" in asked:
        return Fault(kind="stall", after_events=5, reply=Reply.text("Once upon a time " * 30), hang_s=30)
    return Reply.text("A test workspace with a README.")


def test_the_page_has_its_examples() -> None:
    assert len(EXAMPLES) == 5


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda code: code.splitlines()[2][:40])
def test_each_example_runs_as_written(example: str, workspace: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    as_a_person(monkeypatch, workspace, tmp_path / "home")
    with FakeMessagesServer(model) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(example, str(PAGE), "exec"), {"__name__": "__main__"})
    out = printed.getvalue()
    assert server.requests and all(r.error is None for r in server.requests)
    if "List the files" in example:
        assert "run_command: 'README.md" in out and "README.md is the only file." in out
    elif "long story" in example:
        assert out.strip() == "interrupted"
    elif "SetMode" in example:
        assert out.splitlines() == ["ModeChanged read-only", "True"]
    else:
        assert "A test workspace with a README." in out
