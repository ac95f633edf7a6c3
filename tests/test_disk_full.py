"""A full disk, for real: a 64 KB tmpfs mounted inside the workspace (the tests run as root, as
CI does). An edit or a write that cannot fit, or an undo that cannot restore a file, leaves
every file as it was and says so in one line."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import git
from scribe.tools.base import ToolContext
from scribe.tools.git import commit_paths, undo_commit
from scribe.tools.registry import builtin_tools, run_tool

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def small_disk(workspace: Path) -> Iterator[Path]:
    """workspace/data: a 64 KB file system of its own."""
    folder = workspace / "data"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def text_of(size: int, word: str) -> str:
    """`size` characters whose first line, `top of the {word} text`, occurs once."""
    line = f"{word} line of the tracked file, kept whole\n"
    return (f"top of the {word} text\n" + line * (size // len(line) + 1))[:size]


def call(ctx: ToolContext, name: str, **args: object) -> tuple[str, bool]:
    out = run_tool(builtin_tools(), name, args, ctx)
    return out.text, out.is_error


def test_an_edit_or_write_that_cannot_fit_leaves_the_file_whole(workspace: Path, small_disk: Path) -> None:
    tracked = small_disk / "notes.txt"
    original = text_of(30_000, "original")
    tracked.write_text(original)
    git(workspace, "add", "data/notes.txt")
    git(workspace, "commit", "-q", "-m", "a 30 KB tracked file")
    ctx = ToolContext(workspace=workspace)
    call(ctx, "read_file", path="data/notes.txt")

    full = "could not write data/notes.txt: no space left on device; the file is unchanged"
    assert call(ctx, "edit_file", path="data/notes.txt", old_text="top of the original text", new_text="x" * 45_000) == (full, True)
    assert call(ctx, "write_file", path="data/notes.txt", content=text_of(50_000, "new")) == (full, True)
    assert tracked.read_text() == original
    assert os.listdir(small_disk) == ["notes.txt"]  # no temporary file left behind
    assert git(workspace, "status", "--porcelain") == ""

    # What fits still goes through, and the next edit sees it.
    assert not call(ctx, "edit_file", path="data/notes.txt", old_text="top of the original", new_text="top of the edited")[1]
    assert tracked.read_text() == original.replace("top of the original", "top of the edited")


def test_an_undo_that_cannot_restore_a_file_changes_nothing(workspace: Path, small_disk: Path) -> None:
    tracked = small_disk / "notes.txt"
    tracked.write_text(text_of(40_000, "before"))
    git(workspace, "add", "data/notes.txt")
    git(workspace, "commit", "-q", "-m", "the 40 KB version")
    shorter = text_of(20_000, "after")
    tracked.write_text(shorter)
    commit = commit_paths(workspace, ["data/notes.txt"], "scribe: shorten\n\nScribe-Session: s1\n")
    assert commit is not None
    (small_disk / "filler").write_bytes(b"\0" * 24_000)  # now 40 KB cannot fit beside what is there

    undone = undo_commit(workspace, commit.sha, "s1")
    assert not undone.done
    assert undone.message == ("could not write data/notes.txt: no space left on device; the file is unchanged; "
                              "nothing undone")
    assert git(workspace, "rev-parse", "HEAD").strip() == commit.sha
    assert tracked.read_text() == shorter
    assert sorted(os.listdir(small_disk)) == ["filler", "notes.txt"]

    (small_disk / "filler").unlink()  # with room, the same undo restores the 40 KB version
    assert undo_commit(workspace, commit.sha, "s1").done
    assert tracked.read_text() == text_of(40_000, "before")
    assert git(workspace, "status", "--porcelain") == ""
