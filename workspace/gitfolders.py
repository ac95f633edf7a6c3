"""Which git folders a sandboxed command may write, and which of their entries it may not,
decided from real paths (never from a `gitdir:` file alone: a command could have written it).

The workspace's own `.git` (a folder, or a `gitdir:` file) is pinned in the sandbox: bound onto
itself, so a command cannot rename, remove or replace it. A git folder outside the workspace (a
linked worktree's, a submodule's) is writable only when it verifiably belongs to this workspace:
a worktree's admin folder `<common>/worktrees/<name>` whose `gitdir` file points back at this
workspace's `.git`, or a submodule's folder whose `core.worktree` is this workspace. Anything
else is refused, with a line saying so. Inside every git folder, what git reads as configuration
or runs stays read-only: `config`, `config.worktree`, `hooks/`, `info/` (attributes, exclude),
the `commondir` and `gitdir` pointers, and the same in each worktree's and submodule's folder.
So a command's own `git commit` works in the sandbox, and nothing it does there changes what
scribe's git (or the person's) runs afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scribe.workspace.gitrun import GitMissing, run_git

# Entries of a git folder that git reads as configuration or runs.
CONFIG_ENTRIES = ("config", "config.worktree", "hooks", "info", "commondir", "gitdir")


@dataclass(frozen=True)
class GitFolders:
    outside: tuple[Path, ...] = ()  # git folders outside the workspace that belong to it: writable
    pinned: tuple[Path, ...] = ()  # bound onto themselves: a command cannot move or replace them
    read_only: tuple[Path, ...] = ()  # configuration and programs, read-only to commands
    refused: tuple[str, ...] = ()  # a git folder not made writable, and why
    # Configuration entries missing when the sandbox was set up: a bind cannot keep a command from
    # creating one, so scribe removes any that appears once the command ended (Protection.sweep).
    absent: tuple[Path, ...] = ()


def git_folders(workspace: Path) -> GitFolders:
    root = workspace.resolve()
    dot = root / ".git"
    if dot.is_symlink():
        target = dot.resolve()
        if target.is_relative_to(root):
            return GitFolders(read_only=tuple(_config_of(target, target)))
        return GitFolders(refused=(f"{target}: not writable: .git is a symlink to it, and a link cannot be "
                                   "checked to belong to this workspace",))
    if dot.is_dir():
        common = _common_dir(dot)
        if common != dot and not common.is_relative_to(root):
            return GitFolders(pinned=(dot,), read_only=tuple(_config_of(dot, dot)),
                              refused=(f"{common}: not writable: {dot}/commondir points outside the workspace",))
        return GitFolders(pinned=(dot,), read_only=tuple(_config_of(dot, common)), absent=_absent(dot, common))
    if not dot.is_file():
        return GitFolders()
    gitdir = _pointer(dot)
    if gitdir is None:
        return GitFolders(read_only=(dot,))
    common = _common_dir(gitdir)
    inside = gitdir.is_relative_to(root) and common.is_relative_to(root)
    why = None if inside else _why_not_ours(root, gitdir, common)
    if why is not None:
        return GitFolders(read_only=(dot,), refused=(f"{gitdir}: not writable: {why}",))
    outside = tuple(p for p in dict.fromkeys((gitdir, common)) if not p.is_relative_to(root))
    return GitFolders(outside=outside, pinned=(gitdir,) if gitdir.is_relative_to(root) else (),
                      read_only=(dot, *_config_of(gitdir, common)), absent=_absent(gitdir, common))


def _absent(gitdir: Path, common: Path) -> tuple[Path, ...]:
    return tuple(entry for folder in dict.fromkeys((gitdir, common)) for name in CONFIG_ENTRIES
                 if not (entry := folder / name).exists() and not entry.is_symlink())


def _pointer(dot: Path) -> Path | None:
    """The folder a `.git` file names (`gitdir: <path>`, relative to the file's folder)."""
    try:
        first = dot.read_text(encoding="utf-8", errors="replace").splitlines()[:1]
    except OSError:
        return None
    if not first or not first[0].startswith("gitdir:"):
        return None
    named = Path(first[0].removeprefix("gitdir:").strip())
    return (dot.parent / named).resolve()


def _common_dir(gitdir: Path) -> Path:
    try:
        named = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return gitdir
    return (gitdir / named).resolve() if named else gitdir


def _why_not_ours(root: Path, gitdir: Path, common: Path) -> str | None:
    """None when `gitdir` (outside the workspace) verifiably belongs to it, else why not."""
    if not gitdir.is_dir():
        return "the folder .git points at does not exist"
    back = gitdir / "gitdir"
    if back.is_file():  # a linked worktree's admin folder, which git keeps in <common>/worktrees/
        try:
            points = Path(back.read_text(encoding="utf-8", errors="replace").strip())
        except OSError:
            points = Path()
        if (gitdir / points).resolve() == root / ".git" and gitdir.parent == common / "worktrees":
            return None
        return f"it is a worktree's git folder, but not this workspace's (its gitdir file names {points})"
    if common == gitdir and _core_worktree(gitdir) == root:  # a submodule's, kept in the superproject
        return None
    return ".git points at it, but it does not point back at this workspace (no worktree gitdir file or " \
           "core.worktree naming it)"


def _core_worktree(gitdir: Path) -> Path | None:
    try:
        done = run_git(gitdir, "config", "--file", str(gitdir / "config"), "--get", "core.worktree")
    except (GitMissing, OSError):
        return None
    value = done.stdout.decode("utf-8", errors="replace").strip()
    return (gitdir / value).resolve() if done.returncode == 0 and value else None


def _config_of(gitdir: Path, common: Path) -> Iterator[Path]:
    """The configuration entries of `gitdir`, its common folder, their worktrees and submodules."""
    folders = [gitdir, common]
    for group in ("worktrees", "modules"):
        try:
            folders += sorted(p for p in (common / group).iterdir() if p.is_dir() and not p.is_symlink())
        except OSError:
            pass  # no such group: nothing to add
    for folder in dict.fromkeys(folders):
        for name in CONFIG_ENTRIES:
            entry = folder / name
            if entry.exists() or entry.is_symlink():
                yield entry
