"""Which files the tools consider part of the workspace, and glob matching over them. Shared
by list_files and search_files so both see the same file set: git's view (tracked plus
untracked-not-ignored) inside a repository, a pruned directory walk elsewhere."""

from __future__ import annotations

import os
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path

from scribe.workspace.git.run import GitMissing, run_git
from scribe.workspace.sandbox.bwrap import Confinement

# Skipped by the walk outside git; inside git, .gitignore decides (but .git/.scribe never show).
SKIP_DIRS = frozenset({".git", ".scribe", "node_modules", "__pycache__", ".venv"})
_HIDDEN = frozenset({".git", ".scribe"})
_GIT_TIMEOUT_S = 60


def files_under(base: Path, box: Confinement | None = None) -> list[Path]:
    """Every file under `base` (a resolved directory or file), as absolute paths, unsorted. `box`:
    where git runs (the session's Protection; None: the read-only sandbox where there is one)."""
    if not base.is_dir():
        return [base]
    names = _git_files(base, box)
    if names is None:
        names = _walk_files(base)
    found = []
    for name in names:
        if _HIDDEN.intersection(Path(name).parts):
            continue
        path = base / name
        # ls-files --cached still lists files deleted from the work tree, and nested repos
        # show up as directories; keep only what is a file (or a symlink) right now.
        if path.is_symlink() or path.is_file():
            found.append(path)
    return found


def _git_files(base: Path, box: Confinement | None) -> list[str] | None:
    """Paths relative to `base` as git sees them, or None when `base` is not in a work tree."""
    try:
        # Listing must not take the index lock a concurrent `git commit` needs.
        result = run_git(base, "ls-files", "--cached", "--others", "--exclude-standard", "-z",
                         env={"GIT_OPTIONAL_LOCKS": "0"}, timeout=_GIT_TIMEOUT_S, box=box)
    except (GitMissing, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    return [os.fsdecode(name) for name in result.stdout.split(b"\0") if name]


def _walk_files(base: Path) -> list[str]:
    names: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        rel_dir = os.path.relpath(dirpath, base)
        for filename in filenames:
            names.append(filename if rel_dir == "." else f"{rel_dir}/{filename}")
    return names


def glob_match(relative: str, pattern: str) -> bool:
    """fnmatch on a posix relative path, made forgiving the way people write globs:
    `*.py` (no slash) matches the file name at any depth, and `a/**/b` also matches `a/b`."""
    pattern = pattern.removeprefix("./")
    if fnmatchcase(relative, pattern):
        return True
    if "/" not in pattern:
        return fnmatchcase(relative.rsplit("/", 1)[-1], pattern)
    if "**/" in pattern:
        return fnmatchcase(relative, pattern.replace("**/", ""))
    return False


def tree_order(relative: str) -> tuple[str, ...]:
    """Sort key listing a directory's files together, before a sibling like `a.b/` that a
    plain string sort would put first; ripgrep's --sort path walks in this order too."""
    return tuple(relative.split("/"))
