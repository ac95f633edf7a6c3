"""Taking back scribe's commit at HEAD (`scribe undo`, `/undo` after an auto-commit), with git
run as workspace/git.py runs it: only scribe's commit, and only the files it changed. HEAD moves
back to its parent and those files return to the parent's content; it refuses when one of them
has uncommitted changes, when HEAD moved on, or when the commit was pushed. Files are written
and removed by the confined writer (workspace/confined.py): never through a link, never outside.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from scribe.workspace.git.repository import (
    NO_OPTIONAL_LOCKS,
    TRAILER,
    GitRefused,
    Repository,
    chunks,
    in_progress,
    index_locked,
    nul_split,
    open_repository,
    output_of,
    run_changes,
    serialised,
)
from scribe.workspace.git.run import GitResult
from scribe.workspace.sandbox.bwrap import Confinement
from scribe.workspace.writers.atomic import WriteRefused
from scribe.workspace.writers.confined import ConfinedRoot, ConfinedWrite


@dataclass(frozen=True)
class UndoResult:
    done: bool
    message: str  # one line for the person: what was undone, or why not
    sha: str | None = None  # the commit undone
    head: str | None = None  # HEAD afterwards (the commit's parent)
    files: list[str] = field(default_factory=list)


def session_of(message: str) -> str | None:
    """The session id in a commit message's `Scribe-Session:` trailer."""
    for line in reversed(message.strip().splitlines()):
        if line.startswith(f"{TRAILER}:"):
            return line.split(":", 1)[1].strip()
    return None


@dataclass(frozen=True)
class _CommitObject:
    parents: list[str]
    message: str

    @classmethod
    def parse(cls, raw: bytes) -> _CommitObject:
        headers, _, message = raw.decode("utf-8", errors="replace").partition("\n\n")
        return cls([line.split()[1] for line in headers.splitlines() if line.startswith("parent ")], message)

    @property
    def subject(self) -> str:
        return next((line for line in self.message.splitlines() if line.strip()), "")


def undo_commit(workspace: Path, sha: str | None, session_id: str | None = None, *,
                lock: Path | None = None, box: Confinement | None = None) -> UndoResult:
    """Take back scribe's commit `sha` (None: whatever scribe commit HEAD is): HEAD returns to
    its parent and the files the commit changed return to the parent's content; nothing else
    is touched (other files, staged or not, stay as they are). Refuses, changing nothing, when
    HEAD is not that commit, when one of its files has uncommitted changes, when it was pushed,
    when one of them lies behind a link, or during a merge or rebase, or while git's index is
    locked. Once HEAD moved the undo is done; what git then could not do (the index) is a
    warning in its message. `lock`: see workspace/commitlock.py. Raises GitUnavailable outside
    a repository."""
    with serialised(lock):
        names = ["diff-tree", "-r", "-z", "--name-status", "--no-renames", "HEAD^", "HEAD"]
        repo, (head_sha, raw, remote, listed) = open_repository(
            workspace, box, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], ["cat-file", "commit", "HEAD"],
            ["branch", "-r", "--contains", "HEAD"], names)
        if head_sha.status != 0:
            return UndoResult(False, "the repository has no commits; nothing to undo")
        head = head_sha.out.decode().strip()
        commit = _CommitObject.parse(raw.out)
        subject = commit.subject
        if sha is not None and head != sha:
            return UndoResult(False, f"HEAD moved: it is {head[:10]} ({subject}), not scribe's commit {sha[:10]}; "
                                     "undo only takes back scribe's commit while it is the latest")
        owner = session_of(commit.message)
        if owner is None:
            return UndoResult(False, f"HEAD {head[:10]} ({subject}) is not a scribe commit; nothing undone")
        if session_id is not None and owner != session_id:
            return UndoResult(False, f"HEAD {head[:10]} ({subject}) is a commit of session {owner}, not of "
                                     f"{session_id}; nothing undone")
        if len(commit.parents) != 1:
            return UndoResult(False, f"{head[:10]} is the repository's first commit; undo it by hand "
                                     "(git update-ref -d HEAD)")
        busy = in_progress(repo.git_dir)
        if busy:
            return UndoResult(False, f"{busy} is in progress; finish it first")
        locked = index_locked(repo.git_dir)
        if locked:
            return UndoResult(False, f"{locked}; nothing undone")
        published = output_of(["branch"], remote).split()
        if published:
            return UndoResult(False, f"{head[:10]} is already on {published[0]}; take it back with "
                                     f"`git revert {head[:10]}` rather than rewrite what was pushed")
        parent = commit.parents[0]
        return _undo_to(repo, head, parent, subject, nul_split(output_of(names, listed)))


def _undo_to(repo: Repository, head: str, parent: str, subject: str, entries: list[str]) -> UndoResult:
    status = dict(zip(entries[1::2], entries[0::2], strict=True))  # path -> A, M, D or T
    files = sorted(status)
    restore = [p for p in files if status[p] != "A"]
    added = [p for p in files if status[p] == "A"]
    look = ["status", "--porcelain=v1", "-z", "--no-renames", "--ignore-submodules=all", "--", *files]
    tree = ["ls-tree", "-z", parent, "--", *restore]
    blobs = [["cat-file", "blob", f"{parent}:{p}"] for p in restore]
    looked, *rest = repo.ask(look, *([tree, *blobs] if restore else []), env=NO_OPTIONAL_LOCKS)
    dirty = sorted({e[3:] for e in nul_split(output_of(look, looked)) if len(e) > 3})
    if dirty:
        return UndoResult(False, f"uncommitted changes to {', '.join(dirty)} would be lost; commit or stash "
                                 "them first")
    root = ConfinedRoot(repo.top)
    # Every restored file is written beside its place first; if one cannot be (a full disk, a
    # link on the way), none is put in place and nothing, HEAD included, has changed.
    try:
        modes = _modes(output_of(tree, rest[0])) if restore else {}
        pending, by_git = _prepare_restore(root, restore, modes, dict(zip(restore, rest[1:], strict=True)))
        for rel in added:
            root.check(rel)
    except WriteRefused as exc:  # a full disk, a link on the way (Outside)
        return UndoResult(False, f"{exc}; nothing undone")
    except (OSError, GitRefused) as exc:
        return UndoResult(False, f"could not restore: {exc}; nothing undone")
    try:
        repo.change(["update-ref", "-m", f"scribe undo: {subject}", "HEAD", parent, head])
    except GitRefused:  # HEAD moved meanwhile: nothing changed, and nothing is left behind
        for write in pending:
            write.discard()
        raise
    # Undone: HEAD moved. What follows cannot take that back; what git refuses is told.
    problems = []
    for write in pending:
        try:
            write.commit()
        except WriteRefused as exc:
            problems.append(f"{write.name} not restored ({exc}); `git checkout {parent[:10]} -- {write.name}` does it")
    problems += _finish_undo(repo, parent, by_git, [w.name for w in pending], added)
    for rel in added:
        try:
            root.remove(rel, prune=True)
        except (WriteRefused, OSError) as exc:
            problems.append(f"{rel} not removed ({exc})")
    what = ([f"restored {', '.join(restore)}"] if restore else []) + (
        [f"removed {', '.join(added)} (new in it)"] if added else [])
    return UndoResult(True, f"undid {head[:10]} ({subject}): HEAD is back at {parent[:10]}; "
                            + ("; ".join(what) or "no files changed")
                            + "".join(f"; warning: {p}" for p in problems), head, parent, files)


def _modes(listing: str) -> dict[str, tuple[int, str]]:
    """path -> (mode, type) from `ls-tree -z`."""
    found = {}
    for entry in nul_split(listing):
        meta, _, path = entry.partition("\t")
        mode, kind, _ = meta.split(" ", 2)
        found[path] = (int(mode, 8), kind)
    return found


def _finish_undo(repo: Repository, parent: str, by_git: Sequence[str], restored: Sequence[str],
                 added: Sequence[str]) -> list[str]:
    """The undo's work after HEAD moved, in one sandbox: the index follows the restored files
    and forgets the added ones, and git writes the files only it writes (links, submodules).
    What failed, in words."""
    resets = [["reset", "-q", parent, "--", *batch] for batch in chunks(restored)]
    removals = [["rm", "-q", "--cached", "--ignore-unmatch", "--", *batch] for batch in chunks(added)]
    checkouts = [["checkout", parent, "--", *batch] for batch in chunks(by_git)]
    if not (resets or removals or checkouts):
        return []
    try:
        results = run_changes(repo.top, repo.writer(), *resets, *removals, *checkouts)
    except GitRefused as exc:
        return [f"git's index was not updated ({exc}); `git reset -q` once it can be"]
    problems = []
    try:
        for command, result in zip([*resets, *removals], results, strict=False):
            output_of(command, result, ok=(0, 1) if command[0] == "reset" else (0,))
    except GitRefused as exc:
        problems.append(f"git's index was not updated ({exc}); `git reset -q` once it can be")
    try:
        for command, result in zip(checkouts, results[len(resets) + len(removals):], strict=False):
            output_of(command, result)
    except GitRefused as exc:
        problems.append(f"{', '.join(by_git)} not restored ({exc}); `git checkout {parent[:10]} -- <path>` does it")
    return problems


def _prepare_restore(root: ConfinedRoot, paths: Sequence[str], modes: dict[str, tuple[int, str]],
                     contents: dict[str, GitResult]) -> tuple[list[ConfinedWrite], list[str]]:
    """Write the parent's content of each regular file in `paths` beside it (not yet in place).
    Symlinks and submodules are left to `git checkout`, which writes no file content in place
    and refuses to write through a link. A path that leads through a link is refused (Outside)."""
    pending: list[ConfinedWrite] = []
    by_git: list[str] = []
    try:
        for rel in paths:
            mode, kind = modes.get(rel, (0, ""))
            if kind != "blob" or stat.S_ISLNK(mode):
                root.check(rel)
                by_git.append(rel)
                continue
            content = contents[rel]
            if content.status != 0:
                raise GitRefused(f"git cat-file failed for {rel}")
            pending.append(root.prepare(rel, content.out, executable=bool(mode & 0o111), make_parents=True))
    except BaseException:
        for write in pending:
            write.discard()
        raise
    return pending, by_git
