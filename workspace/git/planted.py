"""Noticing git configuration a command (or a workspace's hook, which runs as one) planted: a
repository it created (`git init`, a nested repository, a submodule, a `gitdir:` file pointing
somewhere new), or a config file, hook or attributes file it changed, anywhere in the workspace.
The sandbox keeps scribe's own git from running what such a file names, but the person's own
`git status` would run it; so the person is told, in the command's result (or that turn's
output) and in the log, naming every key and hook that runs a program. One watch serves a
session (`ToolContext.git_watch`), so what one of them planted is never taken in silently as the
next one's starting point.

How, cheaply: the first command of a session walks the workspace once (never into a git
folder's objects, never through a link, never into the state folder); later ones look again
only at folders whose own entries changed (one `lstat` per folder: a new entry anywhere changes
its folder's mtime) and at the configuration entries of every git folder found. A folder found
to be a git folder by its shape alone (any name but `.git`) is looked into as well, all but its
objects, refs and logs: being shaped like one must not hide a repository made below it. A
workspace of more than MAX_FOLDERS folders is watched as far as that, and the result says so.

What names a program is read with `git config --file F --list` (includes not followed: an
`include.path` is itself reported), in the read-only sandbox, only for files that changed."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.workspace.git.programs import names_a_program
from scribe.workspace.git.shape import looks_like_git_folder
from scribe.workspace.sandbox.bwrap import Confinement

MAX_FOLDERS = 200_000
# What a git folder holds that git reads as configuration, or runs.
_FILES = ("config", "config.worktree", "commondir", "gitdir", "info/attributes")
# What of a git folder found by its shape is not looked into: no configuration, and maybe large.
_GIT_DATA = ("objects", "refs", "logs")
_INCLUDES = ("include.path",)

Signature = tuple[int, int, int, int] | None


@dataclass(frozen=True)
class Planted:
    """What changed in one git folder (`folder`, workspace-relative): whether it is new, which of
    its entries changed, and the keys and hooks among them that run a program. For a `.git`
    file, `points` is the folder it names now."""

    folder: str
    new: bool
    changed: tuple[str, ...] = ()
    programs: tuple[str, ...] = ()
    points: str | None = None

    def line(self) -> str:
        if self.points is not None:
            return f"{self.folder} {'was made' if self.new else 'was changed'}: it points git at {self.points}"
        what = "a new git repository" if self.new else "git configuration changed"
        changed = f" ({', '.join(self.changed)})" if self.changed and not self.new else ""
        runs = (f"; it names programs your own git would run: {'; '.join(self.programs)}" if self.programs
                else "; it names no program")
        return f"{what} at {self.folder}{changed}{runs}"

    def record(self) -> dict[str, object]:
        return {"folder": self.folder, "new": self.new, "changed": list(self.changed), "programs": list(self.programs),
                **({"points": self.points} if self.points is not None else {})}


def describe(changes: Sequence[Mapping[str, Any]], hook: str | None = None) -> str:
    """One line for the person (and the log's readers) from a `git_config` event's changes, made
    by a command or by the workspace's `hook` (its event and command)."""
    lines = [Planted(str(c.get("folder", "?")), bool(c.get("new")), tuple(c.get("changed", ())),
                     tuple(c.get("programs", ())), c.get("points")).line() for c in changes]
    by = f"the workspace's hook {hook}" if hook else "a command"
    return f"{by} changed git configuration in the workspace: " + " | ".join(lines)


@dataclass
class _Folder:
    signature: Signature
    children: list[str] = field(default_factory=list)


class GitConfigWatch:
    """Git folders and their configuration in one workspace, compared before and after a command."""

    def __init__(self, root: Path, skip: Sequence[Path] = (), box: Confinement | None = None) -> None:
        self.root = root.resolve()
        self.box = box
        self._skip = {p.resolve().relative_to(self.root).as_posix() for p in skip
                      if p.resolve().is_relative_to(self.root) and p.resolve() != self.root}
        self._folders: dict[str, _Folder] = {}
        self._gits: dict[str, dict[str, Signature]] = {}  # git folder -> entry -> signature
        self._pointers: dict[str, Signature] = {}  # `.git` files (gitdir pointers) -> signature
        self.incomplete = False  # more folders than MAX_FOLDERS: not all were looked at
        self._ready = False

    def settle(self) -> None:
        """Take in the workspace as it is now (before a command), reporting nothing."""
        self._refresh()

    def changes(self) -> list[Planted]:
        """What a command planted since `settle`."""
        before_gits, before_pointers = dict(self._gits), dict(self._pointers)
        self._refresh()
        found: list[Planted] = []
        for folder, entries in sorted(self._gits.items()):
            old = before_gits.get(folder)
            if old == entries:
                continue
            changed = sorted(name for name in set(entries) | set(old or {}) if (old or {}).get(name) != entries.get(name))
            found.append(Planted(folder, old is None, tuple(changed), tuple(self._programs(folder, changed))))
        for pointer, signature in sorted(self._pointers.items()):
            if before_pointers.get(pointer, "absent") != signature and pointer.rpartition("/")[0] not in self._gits:
                found.append(Planted(pointer, pointer not in before_pointers, points=self._pointed(pointer)))
        return found

    # -- looking -------------------------------------------------------------------------------------

    def _refresh(self) -> None:
        if not self._ready:
            self._ready = True
            self._scan("")
        else:
            for rel in list(self._folders):
                folder = self._folders.get(rel)
                if folder is not None and _lstat_signature(self._path(rel)) != folder.signature:
                    self._relist(rel)
        for pointer in list(self._pointers):
            signature = _lstat_signature(self._path(pointer))
            if signature is None:
                del self._pointers[pointer]
            else:
                self._pointers[pointer] = signature
        for git in list(self._gits):
            if "/modules/" in f"/{git}/" or "/worktrees/" in f"/{git}/":
                continue  # kept inside another git folder: taken again with it below
            if not _is_folder(self._path(git)):
                self._forget_git(git)
                continue
            self._gits[git] = self._entries(git)
            for inner in _inner_git_folders(self._path(git)):
                self._gits[f"{git}/{inner}"] = self._entries(f"{git}/{inner}")

    def _forget_git(self, git: str) -> None:
        for name in [g for g in self._gits if g == git or g.startswith(f"{git}/")]:
            del self._gits[name]

    def _list(self, rel: str) -> tuple[list[str], list[str], list[str]]:
        """A folder's subfolders, the git folders in it, and its `.git` files."""
        children: list[str] = []
        gits: list[str] = []
        pointers: list[str] = []
        try:
            entries = list(os.scandir(self._path(rel)))
        except OSError:
            entries = []
        shaped = rel in self._gits  # a git folder by its shape (the walk never enters a `.git`)
        for entry in entries:
            child = f"{rel}/{entry.name}" if rel else entry.name
            if child in self._skip or (shaped and entry.name in _GIT_DATA):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name == ".git":
                    gits.append(child)
                elif looks_like_git_folder(entry.path):
                    gits.append(child)
                    children.append(child)  # and looked into: its shape must hide nothing below it
                else:
                    children.append(child)
            elif entry.name == ".git" and entry.is_file(follow_symlinks=False):
                pointers.append(child)
        return children, gits, pointers

    def _scan(self, rel: str) -> None:
        """Take in folder `rel` and everything below it."""
        if len(self._folders) >= MAX_FOLDERS:
            self.incomplete = True
            return
        signature = _lstat_signature(self._path(rel))
        children, gits, pointers = self._list(rel)
        self._folders[rel] = _Folder(signature, children)
        self._take(gits, pointers)
        for child in children:
            self._scan(child)

    def _relist(self, rel: str) -> None:
        """Folder `rel` changed: what left it is forgotten, what came is taken in."""
        folder = self._folders[rel]
        if not _is_folder(self._path(rel)):
            self._drop(rel)
            return
        if rel and rel not in self._gits and looks_like_git_folder(self._path(rel)):
            self._gits[rel] = self._entries(rel)  # a folder made a bare repository in place
        children, gits, pointers = self._list(rel)
        for gone in set(folder.children) - set(children):
            self._drop(gone)
        prefix = f"{rel}/" if rel else ""
        for git in [g for g in self._gits if g.startswith(prefix) and "/" not in g[len(prefix):] and g not in gits]:
            self._forget_git(git)
        for pointer in [p for p in self._pointers if p.startswith(prefix) and "/" not in p[len(prefix):]
                        and p not in pointers]:
            del self._pointers[pointer]
        self._folders[rel] = _Folder(_lstat_signature(self._path(rel)), children)
        self._take(gits, pointers)
        for child in children:
            if child not in self._folders:
                self._scan(child)

    def _take(self, gits: Sequence[str], pointers: Sequence[str]) -> None:
        for git in gits:
            if git not in self._gits:
                self._gits[git] = self._entries(git)
        for pointer in pointers:
            self._pointers.setdefault(pointer, _lstat_signature(self._path(pointer)))

    def _drop(self, rel: str) -> None:
        """Forget folder `rel` and all below it."""
        folder = self._folders.pop(rel, None)
        for child in folder.children if folder else ():
            self._drop(child)
        prefix = f"{rel}/"
        for git in [g for g in self._gits if g.startswith(prefix)]:
            del self._gits[git]
        for pointer in [p for p in self._pointers if p.startswith(prefix)]:
            del self._pointers[pointer]

    def _entries(self, git: str) -> dict[str, Signature]:
        folder = self._path(git)
        entries = {name: _lstat_signature(folder / name) for name in _FILES}
        try:
            hooks = list(os.scandir(folder / "hooks"))
        except OSError:
            hooks = []
        for hook in hooks:
            if not hook.name.endswith(".sample"):
                entries[f"hooks/{hook.name}"] = _lstat_signature(Path(hook.path))
        return {name: signature for name, signature in entries.items() if signature is not None}

    def _path(self, rel: str) -> Path:
        return self.root / rel if rel else self.root

    def _pointed(self, pointer: str) -> str:
        try:
            return self._path(pointer).read_text(encoding="utf-8", errors="replace").strip().removeprefix("gitdir:").strip()
        except OSError:
            return "?"

    # -- what runs ----------------------------------------------------------------------------------

    def _programs(self, git: str, changed: Sequence[str]) -> Iterator[str]:
        folder = self._path(git)
        for name in changed:
            if name.startswith("hooks/") and os.path.lexists(folder / name):
                yield f"{git}/{name} (a hook)"
        configs = [name for name in changed if name in ("config", "config.worktree") and (folder / name).is_file()]
        if not configs:
            return
        # Here, not at the top: `scribe log` reads describe() and imports no GitPython for it.
        from scribe.workspace.git.run import GitMissing, run_git_batch

        try:
            results = run_git_batch(self.root, [["config", "--file", str(folder / name), "--list", "-z"]
                                                for name in configs], box=self.box)
        except (GitMissing, subprocess.TimeoutExpired):
            yield f"{git}/config (could not be read)"
            return
        for result in results:
            for entry in result.out.split(b"\0"):
                key, _, value = os.fsdecode(entry).partition("\n")
                lowered = key.lower()
                if key and (names_a_program(key) or lowered in _INCLUDES or
                            (lowered.startswith("includeif.") and lowered.endswith(".path"))):
                    yield f"{key} = {value}"


def _inner_git_folders(folder: Path, depth: int = 0) -> Iterator[str]:
    """The git folders git keeps inside one (a submodule's under modules/, a worktree's)."""
    for group in ("modules", "worktrees"):
        try:
            entries = sorted(os.scandir(folder / group), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and depth < 8:
                inner = Path(entry.path)
                if looks_like_git_folder(inner):
                    yield f"{group}/{entry.name}"
                    yield from (f"{group}/{entry.name}/{deeper}" for deeper in _inner_git_folders(inner, depth + 1))


def _lstat_signature(path: Path) -> Signature:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
