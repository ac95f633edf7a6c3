"""A full disk, for real: a 64 KB tmpfs mounted inside the workspace (the tests run as root, as
CI does). An edit or a write that cannot fit, or an undo that cannot restore a file, leaves
every file as it was and says so in one line.

Each test's body runs in a child process with a mount namespace of its own (`unshare --mount
--propagation private`), and only there is the tmpfs mounted: nothing a test mounts can reach
the machine, and the mount ends with the child, whatever happens to the test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import git
from scribe.tools.base import ToolContext
from scribe.tools.registry import builtin_tools, run_tool
from scribe.workspace.git.repository import commit_paths
from scribe.workspace.git.undo import undo_commit

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
CANNOT_MOUNT = 77  # the child's exit status when it cannot have a small disk of its own


def on_a_small_disk(body: Callable[[Path, Path], None], workspace: Path) -> None:
    """Run `body(workspace, workspace/data)` where workspace/data is a 64 KB file system, in a
    child process whose mount namespace is its own; its assertion failures fail the test."""
    here = Path(__file__).parent
    code = (f"import sys; sys.path[:0] = [{str(here)!r}, {str(here.parent)!r}]; import test_disk_full; "
            f"test_disk_full.child({body.__name__!r}, *sys.argv[1:])")
    host = os.readlink("/proc/self/ns/mnt")
    try:
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", code,
                               str(workspace), host], capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        pytest.skip("unshare (util-linux) is not installed")
    if done.returncode == CANNOT_MOUNT or "unshare failed" in done.stderr:
        pytest.skip(f"cannot mount a tmpfs in a namespace of its own here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr


def child(name: str, workspace: str, host_namespace: str) -> None:
    """The child's side: mount the small disk, only in a namespace that is not the machine's."""
    if os.readlink("/proc/self/ns/mnt") == host_namespace:
        sys.exit("refusing to mount: this process shares the machine's mount namespace")
    folder = Path(workspace) / "data"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        print(mounted.stderr.strip(), file=sys.stderr)
        sys.exit(CANNOT_MOUNT)
    globals()[name](Path(workspace), folder)


def text_of(size: int, word: str) -> str:
    """`size` characters whose first line, `top of the {word} text`, occurs once."""
    line = f"{word} line of the tracked file, kept whole\n"
    return (f"top of the {word} text\n" + line * (size // len(line) + 1))[:size]


def call(ctx: ToolContext, name: str, **args: object) -> tuple[str, bool]:
    out = run_tool(builtin_tools(), name, args, ctx)
    return out.text, out.is_error


def test_an_edit_or_write_that_cannot_fit_leaves_the_file_whole(workspace: Path) -> None:
    on_a_small_disk(edit_and_write_that_cannot_fit, workspace)


def test_an_undo_that_cannot_restore_a_file_changes_nothing(workspace: Path) -> None:
    on_a_small_disk(undo_that_cannot_restore, workspace)


def edit_and_write_that_cannot_fit(workspace: Path, small_disk: Path) -> None:
    tracked = small_disk / "notes.txt"
    original = text_of(30_000, "original")
    tracked.write_text(original)
    git(workspace, "add", "data/notes.txt")
    git(workspace, "commit", "-q", "-m", "a 30 KB tracked file")
    ctx = ToolContext(workspace=workspace)
    call(ctx, "read_file", path="data/notes.txt")

    full = "could not write data/notes.txt: no space left on device; the file is unchanged"
    # (The body runs outside pytest, so each assertion names what it saw.)
    edited = call(ctx, "edit_file", path="data/notes.txt", old_text="top of the original text", new_text="x" * 45_000)
    assert edited == (full, True), edited
    written = call(ctx, "write_file", path="data/notes.txt", content=text_of(50_000, "new"))
    assert written == (full, True), written
    assert tracked.read_text() == original, f"{tracked.stat().st_size} bytes: {tracked.read_text()[:40]!r}…"
    assert os.listdir(small_disk) == ["notes.txt"], os.listdir(small_disk)  # no temporary file left behind
    assert git(workspace, "status", "--porcelain") == "", git(workspace, "status", "--porcelain")

    # What fits still goes through, and the next edit sees it.
    fits = call(ctx, "edit_file", path="data/notes.txt", old_text="top of the original", new_text="top of the edited")
    assert not fits[1], fits
    assert tracked.read_text() == original.replace("top of the original", "top of the edited")


def undo_that_cannot_restore(workspace: Path, small_disk: Path) -> None:
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
    assert not undone.done, undone
    assert undone.message == ("could not write data/notes.txt: no space left on device; the file is unchanged; "
                              "nothing undone"), undone.message
    assert git(workspace, "rev-parse", "HEAD").strip() == commit.sha, "HEAD moved"
    assert tracked.read_text() == shorter, f"{tracked.stat().st_size} bytes: {tracked.read_text()[:40]!r}…"
    assert sorted(os.listdir(small_disk)) == ["filler", "notes.txt"], os.listdir(small_disk)

    (small_disk / "filler").unlink()  # with room, the same undo restores the 40 KB version
    again = undo_commit(workspace, commit.sha, "s1")
    assert again.done, again
    assert tracked.read_text() == text_of(40_000, "before")
    assert git(workspace, "status", "--porcelain") == ""
