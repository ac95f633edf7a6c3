"""What makes a folder a git folder in git's eyes, found with lstat alone, no git run: a folder
made after the session began is recognised by its shape, as git itself recognises one
(`looks_like_git_folder`), and a write that would complete that shape, or put configuration in
a folder git could read as another's common folder, is refused like one inside it
(`git_folder_written`): so the file tools cannot assemble a git folder piece by piece, HEAD last.
The watch of planted configuration (planted.py) finds new git folders the same way."""

from __future__ import annotations

import os
from pathlib import Path

# Entries of a git folder that git reads as configuration or runs.
CONFIG_ENTRIES = ("config", "config.worktree", "hooks", "info", "commondir", "gitdir")


def looks_like_git_folder(folder: str | os.PathLike[str], adding: str | None = None) -> bool:
    """Whether git could take `folder` for a git folder (setup.c's is_git_directory): a HEAD, and
    objects/ and refs/ in its common folder (itself, or wherever a `commondir` file names). Any
    entry of those names counts, a link included (git follows links there, even to a folder made
    later); the folder itself is never followed. `adding`: an entry a write is about to make in
    `folder`, counted as there already (a write must not complete a git folder)."""
    base = os.fspath(folder)
    if adding != "HEAD" and not os.path.lexists(os.path.join(base, "HEAD")):  # most folders stop here
        return False
    return _there(base, "commondir", adding) or (_there(base, "objects", adding) and _there(base, "refs", adding))


def could_be_common_folder(folder: str | os.PathLike[str], adding: str | None = None) -> bool:
    """Whether git could read `folder` as a git folder's common folder: objects/ and refs/ are
    there (links counted), so any `commondir` file naming it makes git read its config and hooks,
    whether or not it has a HEAD of its own."""
    base = os.fspath(folder)
    return _there(base, "objects", adding) and _there(base, "refs", adding)


def git_folder_written(root: Path, path: Path) -> tuple[Path, str] | None:
    """Whether writing `path` (resolved, below `root`) would write in a git folder, or make one,
    as git's own test would find it once the write is done: the folder, and how (`inside`, `makes`:
    the write adds its last piece, `common`: a folder git could read as a common folder gets a
    program-naming entry, or its last piece while it holds one). None: an ordinary write. Asks
    nothing of git: these are the entries git itself looks for, found with lstat."""
    for folder in path.parents:
        if not folder.is_relative_to(root):
            break
        entry = path.relative_to(folder).parts[0]
        if looks_like_git_folder(folder):
            return folder, "inside"
        if looks_like_git_folder(folder, entry):
            return folder, "makes"
        if could_be_common_folder(folder, entry) and (entry in CONFIG_ENTRIES or (
                not could_be_common_folder(folder) and any(_there(os.fspath(folder), name) for name in CONFIG_ENTRIES))):
            return folder, "common"
    return None


def _there(base: str, name: str, adding: str | None = None) -> bool:
    return name == adding or os.path.lexists(os.path.join(base, name))
