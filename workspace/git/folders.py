"""The workspace's git folders: which ones there are (asked of git, not guessed from names), which
a sandboxed command may write, and which of their entries it may not.

Which folders: git is asked, in a sandbox where nothing is writable and no repository program
can run (`git rev-parse --git-dir --git-common-dir`, and the submodules `.gitmodules` lists),
and to its answer are added the folders git keeps beside them: every submodule's folder under
`modules/` (nested ones too) and every worktree's admin folder under `worktrees/`. A `gitdir:`
file of any name (`.bare/`) is found that way. All of them are `protected`: the agent's file
tools never write in them (tools/paths.py). A git folder made after the session began is
recognised by its shape (shape.py).

Which a command may write, decided from real paths (never from a `gitdir:` file alone: a command
could have written it). The workspace's own `.git` (a folder, or a `gitdir:` file) is pinned in
the sandbox: bound onto itself, so a command cannot rename, remove or replace it. A git folder
outside the workspace (a linked worktree's, a submodule's) is writable only when it verifiably
belongs to this workspace: a worktree's admin folder `<common>/worktrees/<name>` whose `gitdir`
file points back at this workspace's `.git`, or a submodule's folder whose `core.worktree` is
this workspace. Anything else is refused, with a line saying so. Inside every git folder, what
git reads as configuration or runs stays read-only: `config`, `config.worktree`, `hooks/`,
`info/` (attributes, exclude), the `commondir` and `gitdir` pointers, and the same in each
worktree's and submodule's folder. So a command's own `git commit` works in the sandbox, and
nothing it does there changes what scribe's git (or the person's) runs afterwards.

`command_protection` is the Protection a workspace's commands get: the sandbox
(sandbox/protection.py) built around these folders.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from scribe.workspace.git.run import GitMissing, file_signature, run_git_batch, run_git_questions
from scribe.workspace.git.shape import CONFIG_ENTRIES, looks_like_git_folder
from scribe.workspace.sandbox.bwrap import Confinement, read_only
from scribe.workspace.sandbox.limits import DEFAULT_MEMORY_MB, DEFAULT_PROCESSES
from scribe.workspace.sandbox.protection import GitFolders, Protection
from scribe.workspace.sandbox.protection import command_protection as _protection

# How deep submodules of submodules are followed under modules/.
_MODULES_DEPTH = 8


@dataclass(frozen=True)
class AskedGit:
    """What git says about a workspace, asked safely."""

    git_dir: Path | None = None
    common_dir: Path | None = None
    top: Path | None = None
    submodules: tuple[str, ...] = ()  # their paths, as .gitmodules lists them
    head: str | None = None  # the commit HEAD names; None: no repository, or no commit yet
    branch: str | None = None  # None: detached, or no repository
    # What the answer depends on, and how it stood: a later question with the same signature
    # gets this answer again instead of another sandbox.
    depends: tuple[str, ...] = ()
    signature: tuple[tuple[int, int, int, int] | None, ...] = ()


_asked: dict[tuple[str, frozenset[tuple[str, str]]], AskedGit] = {}
_asked_lock = threading.Lock()
_ASKED_MAX = 64


def ask_git(workspace: Path, box: Confinement | None = None) -> AskedGit:
    """git's own answer to where this workspace's git folders are, and where its HEAD is; empty
    outside a repository or without git. Asked in the read-only sandbox (or, without one, as
    every git call is: no repository program turned on): rev-parse, symbolic-ref and config run
    none anyway. Kept until one of the files it was read from changes (`.git`, HEAD, the ref it
    names, packed-refs, `.gitmodules`), so the questions a session's start asks of several parts
    of scribe cost one sandbox."""
    key = (str(workspace), frozenset((k, v) for k, v in os.environ.items() if k.startswith("GIT_")))
    with _asked_lock:
        known = _asked.get(key)
    if known is not None and file_signature(known.depends) == known.signature:
        return known
    try:
        where, modules, head, branch = run_git_questions(workspace, [
            ["rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir", "--show-toplevel"],
            ["config", "-z", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$"],
            ["rev-parse", "-q", "--verify", "HEAD^{commit}"], ["symbolic-ref", "-q", "HEAD"],
        ], box=box or read_only())
    except (GitMissing, subprocess.TimeoutExpired):
        return AskedGit()
    lines = os.fsdecode(where.out).splitlines()
    depends = [str(workspace / ".gitmodules"), *(str(p / ".git") for p in (workspace, *workspace.parents))]
    if where.status != 0 or len(lines) < 2:
        asked = AskedGit(depends=tuple(depends), signature=file_signature(depends))
    else:
        git_dir, common = Path(lines[0]), Path(lines[1])
        ref = os.fsdecode(branch.out).strip() if branch.status == 0 else ""
        depends += [str(git_dir / "HEAD"), str(git_dir / "commondir"), str(common / "packed-refs"),
                    *([str(common / ref)] if ref.startswith("refs/") else [])]
        paths = tuple(os.fsdecode(entry).partition("\n")[2] for entry in modules.out.split(b"\0") if b"\n" in entry)
        asked = AskedGit(git_dir, common, Path(lines[2]) if len(lines) > 2 and lines[2] else None, paths,
                         os.fsdecode(head.out).strip() or None if head.status == 0 else None,
                         ref.removeprefix("refs/heads/") or None, tuple(depends), file_signature(depends))
    with _asked_lock:
        if len(_asked) >= _ASKED_MAX:
            _asked.clear()
        _asked[key] = asked
    return asked


def command_protection(workspace: Path, *, allowed_roots: Sequence[Path] = (), state_dir: Path | None = None,
                       enabled: bool = True, bwrap: str | None = None, max_processes: int = DEFAULT_PROCESSES,
                       max_memory_mb: int = DEFAULT_MEMORY_MB) -> Protection:
    """The protection commands of this workspace get (sandbox/protection.py's, which see), built
    around its git folders as git names them."""
    return _protection(workspace, git_folders, allowed_roots=allowed_roots, state_dir=state_dir, enabled=enabled,
                       bwrap=bwrap, max_processes=max_processes, max_memory_mb=max_memory_mb)


def git_folders(workspace: Path, box: Confinement | None = None) -> GitFolders:
    root = workspace.resolve()
    asked = ask_git(root, box)
    found = _by_paths(root)
    protected = _protected(root, asked)
    # Submodules checked out inside the workspace: their configuration is read-only too.
    extra = tuple(entry for folder in protected if folder.is_relative_to(root) and folder not in _own(found)
                  for entry in _entries(folder))
    return GitFolders(found.outside, found.pinned, tuple(dict.fromkeys((*found.read_only, *extra))), found.refused,
                      found.absent, protected)


def _own(found: GitFolders) -> set[Path]:
    return {*found.pinned, *found.outside}


def _protected(root: Path, asked: AskedGit) -> tuple[Path, ...]:
    folders: list[Path] = []
    if asked.git_dir is not None and asked.common_dir is not None:
        folders += [asked.git_dir.resolve(), asked.common_dir.resolve()]
        folders += _kept_beside(asked.common_dir.resolve())
    for path in asked.submodules if asked.top is not None and asked.top.resolve() == root else ():
        dot = root / path / ".git"
        if dot.is_dir() and not dot.is_symlink():
            folders += [dot.resolve(), *_kept_beside(dot.resolve())]
        elif dot.is_file():
            pointed = _pointer(dot)
            if pointed is not None and pointed.is_dir():
                folders.append(pointed)
    dot = root / ".git"
    if dot.is_dir() and not dot.is_symlink():
        folders.append(dot)
    return tuple(dict.fromkeys(folders))


def _kept_beside(common: Path, depth: int = 0) -> list[Path]:
    """The worktrees' admin folders and the submodules' folders git keeps in `common`."""
    found: list[Path] = []
    for group in ("worktrees", "modules"):
        for folder in _subfolders(common / group):
            if looks_like_git_folder(folder):
                found.append(folder)
                if group == "modules" and depth < _MODULES_DEPTH:
                    found += _kept_beside(folder, depth + 1)
            elif group == "modules" and depth < _MODULES_DEPTH:
                found += _kept_beside_named(folder, depth + 1)  # a submodule named "a/b"
    return found


def _kept_beside_named(folder: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    for sub in _subfolders(folder):
        if looks_like_git_folder(sub):
            found += [sub, *_kept_beside(sub, depth + 1)]
        elif depth < _MODULES_DEPTH:
            found += _kept_beside_named(sub, depth + 1)
    return found


def _subfolders(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []  # no such group: nothing to add


def _by_paths(root: Path) -> GitFolders:
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
        [got] = run_git_batch(gitdir, [["config", "--file", str(gitdir / "config"), "--get", "core.worktree"]],
                              box=read_only())
    except (GitMissing, OSError, subprocess.TimeoutExpired):
        return None
    value = got.out.decode("utf-8", errors="replace").strip()
    return (gitdir / value).resolve() if got.status == 0 and value else None


def _entries(folder: Path) -> Iterator[Path]:
    for name in CONFIG_ENTRIES:
        entry = folder / name
        if entry.exists() or entry.is_symlink():
            yield entry


def _config_of(gitdir: Path, common: Path) -> Iterator[Path]:
    """The configuration entries of `gitdir`, its common folder, their worktrees and submodules."""
    folders = [gitdir, common, *_kept_beside(common)]
    for folder in dict.fromkeys(folders):
        yield from _entries(folder)
