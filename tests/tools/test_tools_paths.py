"""Path safety: escapes through '..', absolute paths and symlinks are refused; .git is
read-only and .scribe is off limits; allowed roots widen the reach."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from scribe.tools.base import PathRefused, ToolContext, ToolOutput
from scribe.tools.paths import display_path, resolve_path
from scribe.tools.registry import builtin_tools, run_tool


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace)


def call(ctx: ToolContext, name: str, **args: Any) -> ToolOutput:
    return run_tool(builtin_tools(), name, args, ctx)


OUTSIDE = "is outside the workspace; allow it with allowed_paths in config"


def test_dotdot_escape_is_refused_for_every_file_tool(ctx: ToolContext, workspace: Path) -> None:
    (workspace.parent / "secret.txt").write_text("s3cret\n")
    for name, args in [
        ("read_file", {"path": "../secret.txt"}),
        ("write_file", {"path": "../secret.txt", "content": "x"}),
        ("edit_file", {"path": "../secret.txt", "old_text": "s3cret", "new_text": "x"}),
        ("list_files", {"path": ".."}),
        ("search_files", {"pattern": "s3cret", "path": ".."}),
    ]:
        out = call(ctx, name, **args)
        assert out.is_error, name
        assert out.text.endswith(OUTSIDE), out.text
        assert "s3cret" not in out.text
    assert (workspace.parent / "secret.txt").read_text() == "s3cret\n"
    assert call(ctx, "read_file", path="../secret.txt").text == f"path '../secret.txt' {OUTSIDE}"


def test_absolute_paths_inside_are_allowed_outside_refused(ctx: ToolContext, workspace: Path) -> None:
    inside = call(ctx, "read_file", path=str(workspace / "README.md"))
    assert not inside.is_error and "# test workspace" in inside.text
    assert "README.md" in ctx.seen_hashes  # keyed by the workspace-relative name
    outside = call(ctx, "read_file", path="/etc/hostname")
    assert outside.is_error and OUTSIDE in outside.text
    home = call(ctx, "write_file", path="~/scribe-should-not-exist.txt", content="x")
    assert home.is_error and OUTSIDE in home.text


def test_symlink_escaping_the_workspace_is_refused(ctx: ToolContext, workspace: Path) -> None:
    outside_dir = workspace.parent / "elsewhere"
    outside_dir.mkdir()
    (outside_dir / "f.txt").write_text("outside\n")
    (workspace / "link").symlink_to(outside_dir)
    (workspace / "flink.txt").symlink_to(outside_dir / "f.txt")
    for path in ("link/f.txt", "flink.txt"):
        assert OUTSIDE in call(ctx, "read_file", path=path).text
        assert OUTSIDE in call(ctx, "write_file", path=path, content="pwned").text
    assert (outside_dir / "f.txt").read_text() == "outside\n"


def test_symlink_inside_the_workspace_resolves_to_its_target(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "real.txt").write_text("real\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    out = call(ctx, "read_file", path="alias.txt")
    assert out.text == "     1\treal"
    assert "real.txt" in ctx.seen_hashes


def test_git_dir_is_readable_but_never_writable(ctx: ToolContext, workspace: Path) -> None:
    config_before = (workspace / ".git/config").read_text()
    out = call(ctx, "write_file", path=".git/config", content="broken")
    assert out.is_error
    assert (
        out.text == "path '.git/config' is inside .git/; writing there is refused (use git via run_command)"
    )
    edit = call(ctx, "edit_file", path=".git/config", old_text="[core]", new_text="[x]")
    assert edit.is_error and "inside .git/" in edit.text
    assert (workspace / ".git/config").read_text() == config_before
    # A nested repository's .git and a symlink into .git are refused the same way.
    assert "inside .git/" in call(ctx, "write_file", path="vendor/lib/.git/HEAD", content="x").text
    (workspace / "sneaky").symlink_to(".git")
    assert "inside .git/" in call(ctx, "write_file", path="sneaky/config", content="x").text
    assert not call(ctx, "read_file", path=".git/config").is_error


def test_scribe_dir_is_neither_readable_nor_writable(ctx: ToolContext, workspace: Path) -> None:
    (workspace / ".scribe").mkdir()
    (workspace / ".scribe/log.jsonl").write_text("{}\n")
    read = call(ctx, "read_file", path=".scribe/log.jsonl")
    assert read.is_error
    assert (
        read.text
        == "path '.scribe/log.jsonl' is inside .scribe/, scribe's own log; it cannot be read or written"
    )
    assert call(ctx, "write_file", path=".scribe/lock", content="x").is_error
    assert call(ctx, "list_files", path=".scribe").is_error
    assert not (workspace / ".scribe/lock").exists()


def test_allowed_roots_open_an_outside_directory(workspace: Path, tmp_path: Path) -> None:
    extra = tmp_path / "shared"
    extra.mkdir()
    (extra / "notes.txt").write_text("shared notes\n")
    ctx = ToolContext(workspace=workspace, allowed_roots=(extra,))
    out = call(ctx, "read_file", path=str(extra / "notes.txt"))
    assert out.text == "     1\tshared notes"
    assert ctx.seen_hashes[(extra / "notes.txt").resolve().as_posix()]
    assert not call(ctx, "write_file", path=str(extra / "new.txt"), content="x").is_error
    assert OUTSIDE in call(ctx, "read_file", path=str(tmp_path / "other.txt")).text


def test_resolve_and_display_helpers(ctx: ToolContext, workspace: Path) -> None:
    resolved = resolve_path(ctx, "a/../b/./c.py")
    assert resolved == workspace.resolve() / "b" / "c.py"
    assert display_path(ctx, resolved) == "b/c.py"
    assert display_path(ctx, workspace.resolve()) == "."
    with pytest.raises(PathRefused):
        resolve_path(ctx, "../../etc/passwd")
    empty = call(ctx, "read_file", path="  ")
    assert empty.is_error and empty.text == "path is empty"


def test_a_git_folder_of_any_name_is_read_only_to_the_file_tools(workspace: Path, tmp_path: Path) -> None:
    """`.git` is a file pointing at `.bare/`, and a submodule's folder sits in `.git/modules/`:
    git names them, the protection carries them, and their shape gives them away anyway."""
    from conftest import git, make_repository
    from scribe.workspace.git.folders import command_protection

    origin = make_repository(tmp_path / "origin")
    bare = tmp_path / "bare-clone"
    bare.mkdir()
    git(bare, "clone", "-q", "--bare", str(origin), ".bare")
    (bare / ".git").write_text("gitdir: ./.bare\n")
    git(bare, "config", "core.bare", "false")
    git(workspace, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", str(origin), "lib")
    config = (bare / ".bare" / "config").read_text()
    for root, target in ((bare, ".bare/config"), (bare, ".bare/hooks/post-checkout"),
                         (workspace, ".git/modules/lib/config"), (workspace, "lib/.git")):
        for protection in (command_protection(root), None):  # asked of git, and by shape alone
            ctx = ToolContext(workspace=root, protection=protection)
            out = call(ctx, "write_file", path=target, content="[core]\n\tfsmonitor = /tmp/evil\n")
            assert out.is_error and "writing there is refused (use git via run_command)" in out.text, out.text
            assert "a git folder" in out.text or ".git/" in out.text, out.text
    assert command_protection(bare).git_folders == (str((bare / ".bare").resolve()),)
    assert (bare / ".bare" / "config").read_text() == config
    assert not (bare / ".bare" / "hooks" / "post-checkout").exists()
    # A folder that only looks like a repository's because of its name is an ordinary folder.
    ctx = ToolContext(workspace=bare)
    assert not call(ctx, "write_file", path="docs/.bare-notes/config", content="fine\n").is_error



HEAD_LAST = [("d/config", None), ("d/objects/info/packs", "\n"), ("d/refs/heads/main", "0" * 40 + "\n"),
             ("d/HEAD", "ref: refs/heads/main\n")]


@pytest.mark.parametrize("steps", [
    HEAD_LAST,  # the folder becomes a git folder only when HEAD lands
    [("d/HEAD", "ref: refs/heads/main\n"), ("d/config", None), ("d/objects/x", "x\n"), ("d/refs/x", "x\n")],
    [(f"a/b/{path}", content) for path, content in HEAD_LAST],  # nested further down
    # a git folder whose common folder (`commondir`) is another: git reads the config there
    [("e/objects/x", "x\n"), ("e/refs/x", "x\n"), ("d/commondir", "../e\n"), ("d/HEAD", "ref: refs/heads/main\n"),
     ("e/config", None)],
    [("e/config", None), ("e/objects/x", "x\n"), ("e/refs/x", "x\n"), ("d/HEAD", "ref: refs/heads/main\n"),
     ("d/commondir", "../e\n")],
    # objects/ and refs/ as links (a command can make those): git follows them, so must the guard
    [("d/HEAD", "ref: refs/heads/main\n"), ("link d/objects", "../o"), ("link d/refs", "../r"), ("d/config", None)],
    [("d/config", "[core]\n"), ("d/HEAD", "ref: refs/heads/main\n"), ("link d/objects", "../o"),
     ("link d/refs", "../r"), ("edit d/config", None)],
], ids=["HEAD-last", "HEAD-first", "nested", "common-folder", "common-folder-config-first", "links", "links-edit"])
def test_the_file_tools_cannot_assemble_a_git_folder_piece_by_piece(workspace: Path, tmp_path: Path,
                                                                   steps: list[tuple[str, str | None]]) -> None:
    """A folder is a git folder once git would take it for one (a HEAD, and objects/ and refs/ in
    its common folder, links followed); write_file adding the last piece, or writing into a folder
    git would read as one, is refused, in any order. Were it written, the person's own git in that
    folder would run what the planted config names (`git status` its fsmonitor, `git config -l`
    on a terminal its pager)."""
    import pexpect

    from scribe.workspace.git.folders import command_protection

    marker = tmp_path / "outside" / "planted-program-ran"
    config = (f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "echo fsmonitor >> {marker}; true"\n'
              f'\tpager = "echo pager >> {marker}; cat"\n')
    ctx = ToolContext(workspace=workspace, protection=command_protection(workspace))
    refused = []
    for step, content in steps:
        kind, _, path = step.rpartition(" ")
        if kind == "link":  # what a command did (it may): the guard must see it as git does
            link = workspace / path
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(content or "")
            (link.parent / (content or "")).mkdir()
            continue
        if kind == "edit":
            call(ctx, "read_file", path=path)
            out = call(ctx, "edit_file", path=path, old_text="[core]\n", new_text=config)
        else:
            out = call(ctx, "write_file", path=path, content=config if content is None else content)
        if out.is_error:
            assert "a git folder" in out.text and out.text.endswith("writing there is refused (use git via run_command)"), \
                out.text
            refused.append(path)
    assert refused, "every piece was written"
    marker.parent.mkdir()
    for folder in ("d", "a/b/d"):
        if (workspace / folder).is_dir():
            subprocess.run(["git", "status"], cwd=workspace / folder, capture_output=True)
            pexpect.run("git config -l", cwd=str(workspace / folder))  # on a terminal: its pager
    assert not marker.exists(), marker.read_text()
