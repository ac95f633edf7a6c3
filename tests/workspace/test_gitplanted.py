"""The watch of the workspace's git configuration (workspace/git/planted.py), asked directly: what
a command planted is found wherever it is, a folder shaped like a git folder included. Real git,
and the real read-only sandbox that reads what a config names."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import make_repository
from scribe.workspace.git.folders import command_protection
from scribe.workspace.git.planted import GitConfigWatch


def planted(workspace: Path, watch: GitConfigWatch, script: str) -> list[str]:
    """What the watch reports once `script` (standing in for a command) ran in the workspace."""
    watch.settle()
    subprocess.run(["sh", "-c", script], cwd=workspace, check=True, capture_output=True)
    return [change.line() for change in watch.changes()]


def test_a_folder_shaped_like_a_git_folder_hides_no_repository_below_it(tmp_path: Path) -> None:
    """`x/` is given a HEAD, objects/ and refs/ (git takes it for a git folder), and a repository
    whose fsmonitor the person's own `git status` in `x/sub` would run is made below it: both are
    reported, the one below with its program. Also when `x/` was an ordinary folder the watch had
    seen already, and its repository comes a command later."""
    workspace = make_repository(tmp_path / "workspace")
    watch = GitConfigWatch(workspace, box=command_protection(workspace))
    made = planted(workspace, watch, "mkdir -p x/objects x/refs && echo 'ref: refs/heads/main' > x/HEAD && "
                                     "git init -q x/sub && git -C x/sub config core.fsmonitor /usr/local/bin/evil")
    assert "a new git repository at x; it names no program" in made, made
    assert ("a new git repository at x/sub/.git; it names programs your own git would run: "
            "core.fsmonitor = /usr/local/bin/evil") in made, made

    assert planted(workspace, watch, "mkdir -p y/deep") == []
    made = planted(workspace, watch, "mkdir -p y/objects/pack y/refs && echo 'ref: refs/heads/main' > y/HEAD")
    assert made == ["a new git repository at y; it names no program"], made
    made = planted(workspace, watch, "git init -q y/deep && git -C y/deep config core.pager 'sh evil.sh'")
    assert made == ["a new git repository at y/deep/.git; it names programs your own git would run: "
                    "core.pager = sh evil.sh"], made
    assert planted(workspace, watch, "mkdir -p y/objects/ab y/refs/heads && echo x > y/objects/ab/cd") == []
