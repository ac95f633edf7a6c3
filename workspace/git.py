"""Git facts about the workspace, and the git side of auto-commit, diff and undo, with gitpython.
Absent git, or a folder that is not a repository, is a normal case, not an error.

Everything here leaves the person's own work alone:
- `commit_paths` builds the commit in a temporary index, so what the person has staged stays
  staged and out of scribe's commit; hooks do not run (an automatic checkpoint must not start
  a formatter or stash the person's changes behind their back).
- `undo_commit` takes back only scribe's commit at HEAD, and only the files it changed: HEAD
  moves back to its parent and those files return to the parent's content; it refuses when one
  of them has uncommitted changes, when HEAD moved on, or when the commit was pushed.
- `session_diff` reads through a copy of the index; the real one is untouched.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import git

from scribe.workspace.atomic import PendingWrite, WriteFailed, prepare
from scribe.workspace.commitlock import LockWaitedTooLong, commit_lock
from scribe.workspace.gitrun import GitMissing, neutral_env

TRAILER = "Scribe-Session"
# Operations during which a commit would land in the middle of the person's work.
IN_PROGRESS = {"MERGE_HEAD": "a merge", "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert",
               "rebase-merge": "a rebase", "rebase-apply": "a rebase or git am", "BISECT_LOG": "a bisect"}
# A look at the status must not take the index lock a concurrent commit needs.
NO_OPTIONAL_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}


class GitUnavailable(Exception):
    """The workspace is not a git repository (or git cannot be run)."""


class GitRefused(Exception):
    """git could do it, but it would be unsafe or wrong now; the message says why."""


@dataclass(frozen=True)
class GitState:
    head: str | None
    branch: str | None


class _NeutralGit(git.Git):
    """gitpython's git, every command of which (its `cat-file --batch` object reads included)
    runs with the repository's programs turned off (workspace/gitrun.py)."""

    def __init__(self, working_dir: str | os.PathLike[str] | None = None) -> None:
        super().__init__(working_dir)
        where = Path(working_dir) if working_dir is not None else Path.cwd()
        self.update_environment(**{k: v for k, v in neutral_env(where).items() if os.environ.get(k) != v})


class _Repo(git.Repo):
    GitCommandWrapperType = _NeutralGit


def git_state(workspace: Path) -> GitState:
    try:
        with open_repo(workspace) as repo:
            head = _head(repo)  # None: a repository with no commits yet
            branch = None if repo.head.is_detached else repo.active_branch.name
    except GitUnavailable:
        return GitState(None, None)
    return GitState(head, branch)


@contextmanager
def open_repo(workspace: Path) -> Iterator[git.Repo]:
    try:
        repo = _Repo(workspace, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitUnavailable(f"{workspace} is not a git repository") from None
    except (git.GitCommandNotFound, GitMissing):
        raise GitUnavailable("git is not installed") from None
    with repo:
        yield repo


def is_repository(workspace: Path) -> bool:
    try:
        with open_repo(workspace):
            return True
    except GitUnavailable:
        return False


def _run(repo: git.Repo, *args: str, env: dict[str, str] | None = None, ok: Sequence[int] = (0,)) -> str:
    """One git command in the repository; raises GitRefused with git's own words on failure.
    Paths are literal (a file named `*.py` is that file), except for check-ignore, which
    takes no pathspecs and refuses the option."""
    literal = [] if args[0] == "check-ignore" else ["--literal-pathspecs"]
    status, out, err = repo.git.execute(
        ["git", *literal, "-c", "core.quotepath=off", *args], with_extended_output=True, with_exceptions=False,
        strip_newline_in_stdout=False, env=env)
    if status not in ok:
        first = (err or out).strip().splitlines()
        raise GitRefused(f"git {args[0]} failed: {first[-1] if first else f'exit {status}'}")
    return out


def _head(repo: git.Repo) -> str | None:
    try:
        return repo.head.commit.hexsha
    except ValueError:
        return None


def _in_progress(repo: git.Repo) -> str | None:
    git_dir = Path(repo.git_dir)
    return next((what for name, what in IN_PROGRESS.items() if (git_dir / name).exists()), None)


def _z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# -- auto-commit ------------------------------------------------------------------------------


def dirty_paths(workspace: Path) -> set[str] | None:
    """Files with uncommitted changes (staged, unstaged, or untracked and not ignored);
    None when the workspace is not a repository."""
    try:
        with open_repo(workspace) as repo:
            out = _run(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                       env=NO_OPTIONAL_LOCKS)
    except (GitUnavailable, GitRefused):
        return None
    return {entry[3:] for entry in _z(out) if len(entry) > 3}


def ignored_untracked(workspace: Path, paths: Sequence[str]) -> set[str]:
    """Which of `paths` git ignores (tracked files are never "ignored")."""
    if not paths:
        return set()
    with open_repo(workspace) as repo:
        hits: set[str] = set()
        for batch in _chunks(paths):
            hits.update(p for p in _run(repo, "check-ignore", "--", *batch, ok=(0, 1)).splitlines() if p)
        return hits


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str | None
    files: list[str]
    # Set when HEAD moved but git's index could not take the committed content (a lock): the
    # commit stands, and the person must be told what their next `git commit` would do.
    warning: str | None = None


@contextmanager
def _serialised(lock: Path | None) -> Iterator[None]:
    try:
        with commit_lock(lock):
            yield
    except LockWaitedTooLong as exc:
        raise GitRefused(f"{exc}; nothing changed") from None


def _index_locked(repo: git.Repo) -> str | None:
    lock = Path(repo.git_dir) / "index.lock"
    if lock.exists():
        return (f"git's index is locked ({lock} exists: another git command is running, or one crashed; "
                "remove the file if none runs)")
    return None


def commit_paths(workspace: Path, paths: Sequence[str], message: str, *, lock: Path | None = None) -> Commit | None:
    """Commit exactly `paths` as they are on disk, on top of HEAD; None if that changes nothing.
    The person's staged changes to other files stay staged and are not part of it.
    Either HEAD moves and a Commit is returned (with a warning if the index could not follow),
    or GitRefused is raised and nothing moved. `lock`: see workspace/commitlock.py."""
    with _serialised(lock), open_repo(workspace) as repo:
        busy = _in_progress(repo)
        if busy:
            raise GitRefused(f"{busy} is in progress; nothing committed")
        locked = _index_locked(repo)
        if locked:
            raise GitRefused(f"{locked}; nothing committed")
        parent = _head(repo)
        with tempfile.TemporaryDirectory(prefix="scribe-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            _run(repo, "read-tree", *([parent] if parent else ["--empty"]), env=env)
            for batch in _chunks(paths):
                _run(repo, "add", "--", *batch, env=env)
            tree = _run(repo, "write-tree", env=env).strip()
        if parent is not None and repo.commit(parent).tree.hexsha == tree:
            return None
        changed = _z(_run(repo, "diff-tree", "-r", "-z", "--name-only", "--no-renames", parent or _empty_tree(repo), tree))
        sha = _run(repo, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", message).strip()
        # Refused (nothing moved) when HEAD is no longer `parent`: a commit made meanwhile.
        _run(repo, "update-ref", "-m", f"scribe: {message.splitlines()[0]}", "HEAD", sha, parent or "")
        # Committed. The real index takes the committed content of these paths, so `git status`
        # is clean for them; if it cannot, the commit still stands and the person is told.
        return Commit(sha, parent, changed, _index_follows(repo, sha, changed))


def _index_follows(repo: git.Repo, sha: str, paths: Sequence[str]) -> str | None:
    """Reset the index entries of `paths` to commit `sha`; a warning in words if git refused."""
    try:
        for batch in _chunks(paths):
            _run(repo, "reset", "-q", sha, "--", *batch, ok=(0, 1))
    except GitRefused as exc:
        return (f"git's index was not updated ({exc}); until `git reset -q -- {' '.join(paths)}` runs, "
                "a `git commit` of yours would take these files back out")
    return None


def _empty_tree(repo: git.Repo) -> str:
    return _run(repo, "hash-object", "-t", "tree", os.devnull).strip()


# -- diff -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionDiff:
    base: str  # the commit (or empty tree) compared against
    base_name: str  # how to call it in one line
    text: str  # unified diff, or the --stat summary
    untracked: list[str] = field(default_factory=list)  # new files included as additions


def session_diff(workspace: Path, base: str | None, *, stat: bool = False) -> SessionDiff:
    """What changed in the working tree since `base` (a session's git_head; None: the repository
    had no commit then), tracked and untracked files alike. Untracked files that were already
    there when the session began are included too: git cannot tell them apart."""
    with open_repo(workspace) as repo:
        if base is not None:
            try:
                repo.commit(base)
            except (ValueError, git.BadName):
                raise GitRefused(f"the session began at {base[:10]}, which this repository does not have") from None
        rev = base or _empty_tree(repo)
        name = f"{base[:10]} (where the session began)" if base else "the empty repository the session began in"
        with tempfile.TemporaryDirectory(prefix="scribe-index-") as tmp:
            index = Path(repo.git_dir) / "index"
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if index.exists():
                shutil.copyfile(index, env["GIT_INDEX_FILE"])
            untracked = _z(_run(repo, "ls-files", "-z", "--others", "--exclude-standard", env=env))
            for batch in _chunks(untracked):
                _run(repo, "add", "--intent-to-add", "--", *batch, env=env)
            args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", *(["--stat=100"] if stat else []), rev, "--"]
            text = _run(repo, *args, env=env)
        return SessionDiff(rev, name, text, untracked)


# -- undo -------------------------------------------------------------------------------------


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
                lock: Path | None = None) -> UndoResult:
    """Take back scribe's commit `sha` (None: whatever scribe commit HEAD is): HEAD returns to
    its parent and the files the commit changed return to the parent's content; nothing else
    is touched (other files, staged or not, stay as they are). Refuses, changing nothing, when
    HEAD is not that commit, when one of its files has uncommitted changes, when it was pushed,
    or during a merge or rebase, or while git's index is locked. Once HEAD moved the undo is
    done; what git then could not do (the index) is a warning in its message. `lock`: see
    workspace/commitlock.py. Raises GitUnavailable outside a repository."""
    with _serialised(lock), open_repo(workspace) as repo:
        head = _head(repo)
        if head is None:
            return UndoResult(False, "the repository has no commits; nothing to undo")
        commit = repo.commit(head)
        subject = commit.summary if isinstance(commit.summary, str) else commit.summary.decode()
        message = commit.message if isinstance(commit.message, str) else commit.message.decode()
        if sha is not None and head != sha:
            return UndoResult(False, f"HEAD moved: it is {head[:10]} ({subject}), not scribe's commit {sha[:10]}; "
                                     "undo only takes back scribe's commit while it is the latest")
        owner = session_of(message)
        if owner is None:
            return UndoResult(False, f"HEAD {head[:10]} ({subject}) is not a scribe commit; nothing undone")
        if session_id is not None and owner != session_id:
            return UndoResult(False, f"HEAD {head[:10]} ({subject}) is a commit of session {owner}, not of "
                                     f"{session_id}; nothing undone")
        if len(commit.parents) != 1:
            return UndoResult(False, f"{head[:10]} is the repository's first commit; undo it by hand "
                                     "(git update-ref -d HEAD)")
        busy = _in_progress(repo)
        if busy:
            return UndoResult(False, f"{busy} is in progress; finish it first")
        locked = _index_locked(repo)
        if locked:
            return UndoResult(False, f"{locked}; nothing undone")
        published = _run(repo, "branch", "-r", "--contains", head).split()
        if published:
            return UndoResult(False, f"{head[:10]} is already on {published[0]}; take it back with "
                                     f"`git revert {head[:10]}` rather than rewrite what was pushed")
        parent = commit.parents[0].hexsha
        entries = _z(_run(repo, "diff-tree", "-r", "-z", "--name-status", "--no-renames", parent, head))
        status = dict(zip(entries[1::2], entries[0::2], strict=True))  # path -> A, M, D or T
        files = sorted(status)
        dirty = sorted({e[3:] for e in _z(_run(repo, "status", "--porcelain=v1", "-z", "--no-renames", "--", *files,
                                                    env=NO_OPTIONAL_LOCKS))
                        if len(e) > 3})
        if dirty:
            return UndoResult(False, f"uncommitted changes to {', '.join(dirty)} would be lost; commit or stash "
                                     "them first")
        restore = [p for p in files if status[p] != "A"]
        added = [p for p in files if status[p] == "A"]
        root = Path(repo.working_tree_dir or workspace)
        # Every restored file is written beside its place first; if one cannot be (a full disk),
        # none is put in place and nothing, HEAD included, has changed.
        try:
            pending, by_git = _prepare_restore(repo.commit(parent).tree, restore, root)
        except WriteFailed as exc:
            return UndoResult(False, f"{exc}; nothing undone")
        try:
            _run(repo, "update-ref", "-m", f"scribe undo: {subject}", "HEAD", parent, head)
        except GitRefused:  # HEAD moved meanwhile: nothing changed, and nothing is left behind
            for write in pending:
                write.discard()
            raise
        # Undone: HEAD moved. What follows cannot take that back; what git refuses is told.
        for write in pending:
            write.commit()
        problems = _finish_undo(repo, parent, by_git, [w.name for w in pending], added)
        for rel in added:
            _remove_file(Path(repo.working_tree_dir or workspace), rel)
        what = ([f"restored {', '.join(restore)}"] if restore else []) + (
            [f"removed {', '.join(added)} (new in it)"] if added else [])
        return UndoResult(True, f"undid {head[:10]} ({subject}): HEAD is back at {parent[:10]}; "
                                + ("; ".join(what) or "no files changed")
                                + "".join(f"; warning: {p}" for p in problems), head, parent, files)


def _finish_undo(repo: git.Repo, parent: str, by_git: Sequence[str], restored: Sequence[str],
                 added: Sequence[str]) -> list[str]:
    """The undo's work after HEAD moved: files only git writes, and the index. What failed, in words."""
    problems = []
    try:
        for batch in _chunks(by_git):
            _run(repo, "checkout", parent, "--", *batch)
    except GitRefused as exc:
        problems.append(f"{', '.join(by_git)} not restored ({exc}); `git checkout {parent[:10]} -- <path>` does it")
    try:
        for batch in _chunks(restored):
            _run(repo, "reset", "-q", parent, "--", *batch, ok=(0, 1))  # the index follows the restored files
        for batch in _chunks(added):
            _run(repo, "rm", "-q", "--cached", "--ignore-unmatch", "--", *batch)
    except GitRefused as exc:
        problems.append(f"git's index was not updated ({exc}); `git reset -q` once it can be")
    return problems


def _prepare_restore(tree: git.Tree, paths: Sequence[str], root: Path) -> tuple[list[PendingWrite], list[str]]:
    """Write the parent's content of each regular file in `paths` beside it (not yet in place).
    Symlinks, submodules and paths under a symlinked folder are left to `git checkout`, which
    writes no file content in place and refuses to write through a link."""
    pending: list[PendingWrite] = []
    by_git: list[str] = []
    real_root = root.resolve()
    try:
        for rel in paths:
            blob = tree / rel
            target = root / rel
            if blob.type != "blob" or stat.S_ISLNK(blob.mode) or target.parent.resolve() != (real_root / rel).parent:
                by_git.append(rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            pending.append(prepare(target, blob.data_stream.read(), rel, executable=bool(blob.mode & 0o111)))
    except (WriteFailed, OSError) as exc:
        for write in pending:
            write.discard()
        if isinstance(exc, WriteFailed):
            raise
        raise WriteFailed(f"could not restore: {(exc.strerror or str(exc)).lower()}") from None
    return pending, by_git


def _remove_file(root: Path, rel: str) -> None:
    """Delete a file the undone commit added, and the folders that held only it."""
    target = root / rel
    target.unlink(missing_ok=True)
    folder = target.parent
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent

