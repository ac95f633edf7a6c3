"""Taking back scribe's commit at HEAD (`scribe undo`, `/undo` after an auto-commit), with git
run as repository.py runs it: only scribe's commit, and only the files it changed. HEAD moves
back to its parent and those files return to the parent's content; it refuses when one of them
has uncommitted changes, when HEAD moved on, or when the commit was pushed. Files are written
and removed by the confined writer (workspace/writers/confined.py): never through a link, never
outside.

The commit, its parent's tree entries and the content to restore are read as GitPython's
objects (run.py's `objects`: one `cat-file --batch` reader, confined like every git scribe
runs, ended with the undo's reading), not parsed here.
"""

from __future__ import annotations

import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from scribe.workspace.git.run import GitMissing, objects
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


def undo_commit(workspace: Path, sha: str | None, session_id: str | None = None, *,
                lock: Path | None = None, box: Confinement | None = None) -> UndoResult:
    """Take back scribe's commit `sha` (None: whatever scribe commit HEAD is): HEAD returns to
    its parent and the files the commit changed return to the parent's content; nothing else
    is touched (other files, staged or not, stay as they are). Refuses, changing nothing, when
    HEAD is not that commit, when one of its files has uncommitted changes, when it was pushed,
    when one of them lies behind a link, or during a merge or rebase, or while git's index is
    locked. Once HEAD moved the undo is done; what git then could not do (the index) is a
    warning in its message. `lock`: see workspace/git/commitlock.py. Raises GitUnavailable outside
    a repository."""
    with serialised(lock):
        names = ["diff-tree", "-r", "-z", "--name-status", "--no-renames", "HEAD^", "HEAD"]
        repo, (head_sha, remote, listed) = open_repository(
            workspace, box, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], ["branch", "-r", "--contains", "HEAD"],
            names)
        if head_sha.status != 0:
            return UndoResult(False, "the repository has no commits; nothing to undo")
        head = head_sha.out.decode().strip()
        with objects(repo.top, repo.git_dir, box) as history:
            try:
                commit = history.commit_at(head)
                message, parents = _text(commit.message), [p.hexsha for p in commit.parents]
            except (ValueError, GitMissing, subprocess.TimeoutExpired) as exc:  # GitPython's: a sha it cannot resolve
                return UndoResult(False, f"HEAD {head[:10]} cannot be read as a commit ({exc}); nothing undone")
            subject = next((line for line in message.splitlines() if line.strip()), "")
            if sha is not None and head != sha:
                return UndoResult(False, f"HEAD moved: it is {head[:10]} ({subject}), not scribe's commit "
                                         f"{sha[:10]}; undo only takes back scribe's commit while it is the latest")
            owner = session_of(message)
            if owner is None:
                return UndoResult(False, f"HEAD {head[:10]} ({subject}) is not a scribe commit; nothing undone")
            if session_id is not None and owner != session_id:
                return UndoResult(False, f"HEAD {head[:10]} ({subject}) is a commit of session {owner}, not of "
                                         f"{session_id}; nothing undone")
            if len(parents) != 1:
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
            entries = nul_split(output_of(names, listed))
            status = dict(zip(entries[1::2], entries[0::2], strict=True))  # path -> A, M, D or T
            restore = sorted(p for p in status if status[p] != "A")
            look = ["status", "--porcelain=v1", "-z", "--no-renames", "--ignore-submodules=all", "--", *sorted(status)]
            [looked] = repo.ask(look, env=NO_OPTIONAL_LOCKS)
            dirty = sorted({e[3:] for e in nul_split(output_of(look, looked)) if len(e) > 3})
            if dirty:
                return UndoResult(False, f"uncommitted changes to {', '.join(dirty)} would be lost; commit or stash "
                                         "them first")
            root = ConfinedRoot(repo.top)
            # Every restored file is written beside its place first; if one cannot be (a full disk, a
            # link on the way), none is put in place and nothing, HEAD included, has changed.
            try:
                pending, by_git = _prepare_restore(root, restore, commit.parents[0].tree)
                for rel in status:
                    if status[rel] == "A":
                        root.check(rel)
            except WriteRefused as exc:  # a full disk, a link on the way (Outside)
                return UndoResult(False, f"{exc}; nothing undone")
            except (OSError, ValueError, KeyError, GitRefused, subprocess.TimeoutExpired) as exc:
                return UndoResult(False, f"could not restore: {exc}; nothing undone")
        return _undo_to(repo, head, parents[0], subject, status, pending, by_git)


def _text(message: str | bytes) -> str:
    """A commit's message as text (GitPython gives bytes when its encoding failed it)."""
    return message if isinstance(message, str) else message.decode("utf-8", errors="replace")


def _undo_to(repo: Repository, head: str, parent: str, subject: str, status: dict[str, str],
             pending: list[ConfinedWrite], by_git: list[str]) -> UndoResult:
    files = sorted(status)
    restore = [p for p in files if status[p] != "A"]
    added = [p for p in files if status[p] == "A"]
    root = ConfinedRoot(repo.top)
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


def _prepare_restore(root: ConfinedRoot, paths: Sequence[str], tree: Any) -> tuple[list[ConfinedWrite], list[str]]:
    """Write the content `tree` (the parent's, a GitPython Tree) has for each regular file in
    `paths` beside it (not yet in place). Symlinks and submodules are left to `git checkout`,
    which writes no file content in place and refuses to write through a link. A path that
    leads through a link is refused (Outside)."""
    pending: list[ConfinedWrite] = []
    by_git: list[str] = []
    try:
        for rel in paths:
            entry = tree / rel
            if entry.type != "blob" or stat.S_ISLNK(entry.mode):
                root.check(rel)
                by_git.append(rel)
                continue
            pending.append(root.prepare(rel, entry.data_stream.read(), executable=bool(entry.mode & 0o111),
                                        make_parents=True))
    except BaseException:
        for write in pending:
            write.discard()
        raise
    return pending, by_git
