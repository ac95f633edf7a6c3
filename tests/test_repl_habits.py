"""Habits people bring from other coding agents, in the REPL: `/undo` (and `/rewind`) without
git, `@path` attaching a file, `!command` running one without the model."""

from __future__ import annotations

import json
from pathlib import Path

from test_repl import person, run_repl  # noqa: F401  (person: the autouse fixture of those tests)

from conftest import git
from helpers import events_of, session_logs
from scribe.fakeapi import Reply, tool_use_block
from scribe.memory.events import ToolResultEvent, UndoEvent


def _log(workspace: Path) -> list:  # type: ignore[type-arg]
    [path] = session_logs(workspace)
    return events_of(path)


def test_undo_without_a_commit_restores_what_the_last_turn_wrote_and_edited(workspace: Path) -> None:
    (workspace / "keep.txt").write_bytes(b"kept\r\nas it was\r\n")
    git(workspace, "add", "keep.txt")
    git(workspace, "commit", "-q", "-m", "keep")
    script = [
        Reply([tool_use_block("write_file", {"path": "docs/new.txt", "content": "fresh\n"}),
               tool_use_block("edit_file", {"path": "README.md", "old_text": "test", "new_text": "edited"}),
               tool_use_block("write_file", {"path": "keep.txt", "content": "overwritten\n"})]),
        # the same file twice in one turn: an edit of what the turn itself wrote
        Reply([tool_use_block("edit_file", {"path": "README.md", "old_text": "edited", "new_text": "twice"})]),
        Reply.text("Changed three files."),
        Reply.text("I see they are back."),
    ]
    ran = run_repl(workspace, script, "change files\r/undo\rwhat now?\r/rewind\r", mode="full-auto")
    out = " ".join(ran.out.split())  # lines as rich wrapped them, joined
    assert (workspace / "README.md").read_text() == "# test workspace\n"
    assert (workspace / "keep.txt").read_bytes() == b"kept\r\nas it was\r\n"
    assert not (workspace / "docs" / "new.txt").exists()
    assert "undid the file changes of the turn “change files”: restored README.md, keep.txt; " \
           "removed docs/new.txt (created in it)" in out
    # the model is told at its next call, from the log
    told = json.dumps(ran.server.requests[-1].json["messages"][-1])
    assert "the person undid your file changes of the turn at seq 1 (/undo)" in told
    events = _log(workspace)
    [undone] = [e for e in events if isinstance(e, UndoEvent)]
    assert undone.turn == 1 and undone.removed == ["docs/new.txt"]
    assert set(undone.files) == {"docs/new.txt", "README.md", "keep.txt"}
    # what made it possible: each file tool's result records how to go back
    records = [e.extra["restore"] for e in events if isinstance(e, ToolResultEvent)]
    assert records[0]["before"] is None and records[2]["content"] == "kept\r\nas it was\r\n"
    assert records[1]["old"] == "test" and records[1]["new"] == "edited"
    # /rewind is /undo; nothing is left to take back, and it says why and what would help
    assert "nothing to undo: scribe's file tools have changed no file in this session" in out
    assert "auto_commit" in out.split("nothing to undo")[1]


def test_undo_refuses_when_a_file_changed_since_and_restores_nothing(workspace: Path) -> None:
    script = [
        Reply([tool_use_block("write_file", {"path": "a.txt", "content": "one\n"}),
               tool_use_block("edit_file", {"path": "README.md", "old_text": "test", "new_text": "edited"})]),
        Reply([tool_use_block("run_command", {"command": "echo two >> a.txt"})]),
        Reply.text("Done."),
    ]
    ran = run_repl(workspace, script, "write a\r/undo\r", mode="full-auto")
    assert "✗ a.txt changed since scribe wrote it; nothing restored" in " ".join(ran.out.split())
    assert (workspace / "a.txt").read_text() == "one\ntwo\n"
    assert (workspace / "README.md").read_text() == "# edited workspace\n"  # not restored either
    assert not [e for e in _log(workspace) if isinstance(e, UndoEvent)]
