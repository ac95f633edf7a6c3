"""Git facts about the workspace, and the git side of auto-commit, diff and undo. Absent git, or
a folder that is not a repository, is a normal case, not an error.

Every git call runs through workspace/gitrun.py, as a command runs (sandboxed, no secrets, no
repository program), under the workspace's Protection (`box`; None: the sandbox as this machine
gives it). Several questions asked at one moment go to the sandbox together (`run_git_batch`):
these calls sit at the start and end of every turn.
A question runs with nothing writable; a commit or an undo with the workspace and its git
folders writable (their configuration and hooks not). git is kept out of submodules'
working trees (`--ignore-submodules`): a submodule's own configuration is not scribe's to run.

Everything here leaves the person's own work alone:
- `commit_paths` builds the commit in a temporary index, so what the person has staged stays
  staged and out of scribe's commit; hooks do not run (an automatic checkpoint must not start
  a formatter or stash the person's changes behind their back).
- `undo_commit` takes back only scribe's commit at HEAD, and only the files it changed: HEAD
  moves back to its parent and those files return to the parent's content; it refuses when one
  of them has uncommitted changes, when HEAD moved on, or when the commit was pushed. Files are
  written by the confined writer (workspace/confined.py): never through a link, never outside.
- `session_diff` reads through a copy of the index; the real one is untouched.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from scribe.workspace.atomic import WriteRefused
from scribe.workspace.bwrap import Confinement
from scribe.workspace.commitlock import LockWaitedTooLong, commit_lock
from scribe.workspace.confined import ConfinedRoot, ConfinedWrite
from scribe.workspace.gitfolders import ask_git
from scribe.workspace.gitrun import GitMissing, GitResult, run_git_batch, scratch
from scribe.workspace.sandbox import command_protection

TRAILER = "Scribe-Session"
# Operations during which a commit would land in the middle of the person's work.
IN_PROGRESS = {"MERGE_HEAD": "a merge", "CHERRY_PICK_HEAD": "a cherry-pick", "REVERT_HEAD": "a revert",
               "rebase-merge": "a rebase", "rebase-apply": "a rebase or git am", "BISECT_LOG": "a bisect"}
# A look at the status must not take the index lock a concurrent commit needs.
NO_OPTIONAL_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}
_PATHS = ("--literal-pathspecs", "-c", "core.quotepath=off")  # a file named `*.py` is that file
_LOCATE = ["rev-parse", "--path-format=absolute", "--git-dir", "--show-toplevel"]
_EMPTY_TREE = ["hash-object", "-t", "tree", os.devnull]


class GitUnavailable(Exception):
    """The workspace is not a git repository (or git cannot be run)."""


class GitRefused(Exception):
    """git could do it, but it would be unsafe or wrong now; the message says why."""


@dataclass(frozen=True)
class GitState:
    head: str | None
    branch: str | None


@dataclass(frozen=True)
class _Repo:
    """A workspace that is the top of a git work tree, and how git runs in it."""

    top: Path
    git_dir: Path
    box: Confinement | None
    common_dir: Path | None = None  # where the objects are (a linked worktree shares them)

    def writer(self) -> Confinement:
        """Where git may write: the given Protection, or the one this workspace gets by default."""
        return self.box if self.box is not None else command_protection(self.top)

    def ask(self, *commands: Sequence[str], env: dict[str, str] | None = None,
            binds: Sequence[str] = ()) -> list[GitResult]:
        """Questions, in one read-only sandbox; raises GitUnavailable when git cannot run."""
        return _ask(self.top, commands, self.box, env=env, binds=binds)

    def change(self, *commands: Sequence[str], env: dict[str, str] | None = None,
               binds: Sequence[str] = ()) -> list[GitResult]:
        """Commands that write, in one sandbox, up to the first that fails: GitRefused with git's
        own words then."""
        results = _change(self.top, self.writer(), *commands, env=env, binds=binds, stop=True)
        for command, result in zip(commands, results, strict=False):
            _ok(command, result)
        return results


def _ask(cwd: Path, commands: Sequence[Sequence[str]], box: Confinement | None, *,
         env: dict[str, str] | None = None, binds: Sequence[str] = ()) -> list[GitResult]:
    try:
        return run_git_batch(cwd, [[*_PATHS, *c] if c[0] != "check-ignore" else ["-c", "core.quotepath=off", *c]
                                   for c in commands], env=env, box=box, binds=binds)
    except (GitMissing, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git cannot be run: {exc}") from None


def _ok(command: Sequence[str], result: GitResult, ok: Sequence[int] = (0,)) -> str:
    """The command's output as text, or GitRefused with git's own last line."""
    if result.status not in ok:
        text = (result.err or result.out).decode("utf-8", errors="replace").strip().splitlines()
        raise GitRefused(f"git {command[0]} failed: {text[-1] if text else f'exit {result.status}'}")
    return result.out.decode("utf-8", errors="surrogateescape")


def _located(workspace: Path, result: GitResult) -> _Repo | None:
    """The repository whose work tree's top is `workspace`, from rev-parse's answer."""
    lines = os.fsdecode(result.out).splitlines()
    if result.status != 0 or len(lines) != 2 or Path(lines[1]).resolve() != workspace.resolve():
        return None
    return _Repo(workspace, Path(lines[0]), None)


def _open(workspace: Path, box: Confinement | None, *more: Sequence[str],
          env: dict[str, str] | None = None) -> tuple[_Repo, list[GitResult]]:
    """The repository (as gitfolders.ask_git knows it: most often without another sandbox),
    and the answers to `more` questions, asked together; GitUnavailable when `workspace` is not
    the top of a work tree."""
    if not workspace.is_dir():
        raise GitUnavailable(f"{workspace} is not a git repository")
    root = workspace.resolve()
    asked = ask_git(root, box)
    if asked.git_dir is None or asked.top is None or asked.top.resolve() != root:
        raise GitUnavailable(f"{workspace} is not a git repository")
    return (_Repo(workspace, asked.git_dir, box, asked.common_dir),
            _ask(workspace, more, box, env=env) if more else [])


def git_state(workspace: Path, box: Confinement | None = None) -> GitState:
    """HEAD's commit (None: no commit yet) and branch (None: detached), as git says; both None
    when the workspace is not the top of a work tree. Shares its sandbox with the session's
    other first questions (gitfolders.ask_git)."""
    root = workspace.resolve()
    asked = ask_git(root, box)
    if asked.top is None or asked.top.resolve() != root:
        return GitState(None, None)
    return GitState(asked.head, asked.branch)


def is_repository(workspace: Path, box: Confinement | None = None) -> bool:
    """Whether `workspace` is the top of a git work tree."""
    try:
        _open(workspace, box)
    except GitUnavailable:
        return False
    return True


def _in_progress(git_dir: Path) -> str | None:
    return next((what for name, what in IN_PROGRESS.items() if (git_dir / name).exists()), None)


def _z(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def _chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# -- auto-commit ------------------------------------------------------------------------------


def dirty_paths(workspace: Path, box: Confinement | None = None) -> set[str] | None:
    """Files with uncommitted changes (staged, unstaged, or untracked and not ignored);
    None when the workspace is not a repository."""
    status = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"]
    try:
        _, [answer] = _open(workspace, box, status, env=NO_OPTIONAL_LOCKS)
        out = _ok(status, answer)
    except (GitUnavailable, GitRefused):
        return None
    return {entry[3:] for entry in _z(out) if len(entry) > 3}


def ignored_untracked(workspace: Path, paths: Sequence[str], box: Confinement | None = None) -> set[str]:
    """Which of `paths` git ignores (tracked files are never "ignored")."""
    if not paths:
        return set()
    commands = [["check-ignore", "--", *batch] for batch in _chunks(paths)]
    _, answers = _open(workspace, box, *commands)
    hits: set[str] = set()
    for command, answer in zip(commands, answers, strict=True):
        hits.update(p for p in _ok(command, answer, ok=(0, 1)).splitlines() if p)
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


def _index_locked(git_dir: Path) -> str | None:
    lock = git_dir / "index.lock"
    if lock.exists():
        return (f"git's index is locked ({lock} exists: another git command is running, or one crashed; "
                "remove the file if none runs)")
    return None


@contextmanager
def _temporary_index(box: Confinement | None, writes: bool,
                     copy_of: Path | None = None) -> Iterator[tuple[dict[str, str], Path]]:
    """A temporary index (the environment that names it) in a folder git in `box` may write."""
    with scratch(box, writes) as folder:
        index = folder / "index"
        if copy_of is not None and copy_of.exists():
            shutil.copyfile(copy_of, index)
        yield {"GIT_INDEX_FILE": str(index)}, folder


def commit_paths(workspace: Path, paths: Sequence[str], message: str, *, lock: Path | None = None,
                 box: Confinement | None = None) -> Commit | None:
    """Commit exactly `paths` as they are on disk, on top of HEAD; None if that changes nothing.
    The person's staged changes to other files stay staged and are not part of it.
    Either HEAD moves and a Commit is returned (with a warning if the index could not follow),
    or GitRefused is raised and nothing moved. `lock`: see workspace/commitlock.py.
    Three sandboxes: the tree built in a temporary index, the commit made, HEAD moved."""
    if not workspace.is_dir():
        raise GitRefused(f"{workspace} is not a git repository")
    writer = box if box is not None else command_protection(workspace)
    with _serialised(lock), _temporary_index(writer, True) as (env, _):
        # Without a commit yet, read-tree fails and the temporary index starts empty: the same.
        where, head, tree, empty, _, *added, built = _change(
            workspace, writer, _LOCATE, ["rev-parse", "-q", "--verify", "HEAD^{commit}"],
            ["rev-parse", "-q", "--verify", "HEAD^{tree}"], _EMPTY_TREE, ["read-tree", "HEAD"],
            *(["add", "--", *batch] for batch in _chunks(paths)), ["write-tree"], env=env)
        repo = _located(workspace, where)
        if repo is None:
            raise GitRefused(f"{workspace} is not a git repository")
        busy = _in_progress(repo.git_dir)
        if busy:
            raise GitRefused(f"{busy} is in progress; nothing committed")
        locked = _index_locked(repo.git_dir)
        if locked:
            raise GitRefused(f"{locked}; nothing committed")
        for result in added:
            _ok(["add"], result)
        new_tree = _ok(["write-tree"], built).strip()
    parent = head.out.decode().strip() if head.status == 0 else None
    if parent is not None and tree.out.decode().strip() == new_tree:
        return None
    listed, made = _change(workspace, writer,
                           ["diff-tree", "-r", "-z", "--name-only", "--no-renames", parent or _ok(_EMPTY_TREE, empty).strip(),
                            new_tree], ["commit-tree", new_tree, *(["-p", parent] if parent else []), "-m", message])
    changed = _z(_ok(["diff-tree"], listed))
    sha = _ok(["commit-tree"], made).strip()
    # Refused (nothing moved) when HEAD is no longer `parent`: a commit made meanwhile. Then the
    # real index takes the committed content of these paths, so `git status` is clean for them;
    # if it cannot, the commit still stands and the person is told.
    moved, *reset = _change(workspace, writer,
                            ["update-ref", "-m", f"scribe: {message.splitlines()[0]}", "HEAD", sha, parent or ""],
                            *(["reset", "-q", sha, "--", *batch] for batch in _chunks(changed)), stop=True)
    _ok(["update-ref"], moved)
    return Commit(sha, parent, changed, _index_warning(changed, reset))


def _change(workspace: Path, box: Confinement, *commands: Sequence[str], env: dict[str, str] | None = None,
            binds: Sequence[str] = (), stop: bool = False) -> list[GitResult]:
    """Commands that write, in one sandbox: the workspace and its git folders writable."""
    try:
        return run_git_batch(workspace, [[*_PATHS, *c] for c in commands], env=env, box=box, writes=True,
                             binds=binds, stop=stop)
    except (GitMissing, subprocess.TimeoutExpired) as exc:
        raise GitRefused(f"git cannot be run: {exc}") from None


def _index_warning(paths: Sequence[str], resets: Sequence[GitResult]) -> str | None:
    """A warning in words when git could not reset the index entries of `paths` (exit 1 only
    says some files still differ)."""
    for result in resets:
        try:
            _ok(["reset"], result, ok=(0, 1))
        except GitRefused as exc:
            return (f"git's index was not updated ({exc}); until `git reset -q -- {' '.join(paths)}` runs, "
                    "a `git commit` of yours would take these files back out")
    return None


# -- diff -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionDiff:
    base: str  # the commit (or empty tree) compared against
    base_name: str  # how to call it in one line
    text: str  # unified diff, or the --stat summary
    untracked: list[str] = field(default_factory=list)  # new files included as additions


def session_diff(workspace: Path, base: str | None, *, stat: bool = False,
                 box: Confinement | None = None) -> SessionDiff:
    """What changed in the working tree since `base` (a session's git_head; None: the repository
    had no commit then), tracked and untracked files alike. Untracked files that were already
    there when the session began are included too: git cannot tell them apart."""
    repo, _ = _open(workspace, box)
    name = f"{base[:10]} (where the session began)" if base else "the empty repository the session began in"
    with _temporary_index(box, False, repo.git_dir / "index") as (env, folder):
        listing = ["ls-files", "-z", "--others", "--exclude-standard"]
        first = ["rev-parse", "-q", "--verify", f"{base}^{{commit}}"] if base else _EMPTY_TREE
        known, others = repo.ask(first, listing, env=env)
        if base is not None and known.status != 0:
            raise GitRefused(f"the session began at {base[:10]}, which this repository does not have")
        rev = base or _ok(_EMPTY_TREE, known).strip()
        untracked = _z(_ok(listing, others))
        # The index copy's intent-to-add entries write an empty blob: into a folder of scribe's
        # own, which reads the repository's objects through it, not into the repository.
        own = folder / "objects"
        own.mkdir()
        env.update(GIT_OBJECT_DIRECTORY=str(own),
                   GIT_ALTERNATE_OBJECT_DIRECTORIES=str((repo.common_dir or repo.git_dir) / "objects"))
        diff = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all",
                *(["--stat=100"] if stat else []), rev, "--"]
        *added, shown = repo.ask(*(["add", "--intent-to-add", "--", *batch] for batch in _chunks(untracked)), diff,
                                 env=env)
        for result in added:
            _ok(["add"], result)
        return SessionDiff(rev, name, _ok(diff, shown), untracked)


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
    with _serialised(lock):
        names = ["diff-tree", "-r", "-z", "--name-status", "--no-renames", "HEAD^", "HEAD"]
        repo, (head_sha, raw, remote, listed) = _open(
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
        busy = _in_progress(repo.git_dir)
        if busy:
            return UndoResult(False, f"{busy} is in progress; finish it first")
        locked = _index_locked(repo.git_dir)
        if locked:
            return UndoResult(False, f"{locked}; nothing undone")
        published = _ok(["branch"], remote).split()
        if published:
            return UndoResult(False, f"{head[:10]} is already on {published[0]}; take it back with "
                                     f"`git revert {head[:10]}` rather than rewrite what was pushed")
        parent = commit.parents[0]
        return _undo_to(repo, head, parent, subject, _z(_ok(names, listed)))


def _undo_to(repo: _Repo, head: str, parent: str, subject: str, entries: list[str]) -> UndoResult:
    status = dict(zip(entries[1::2], entries[0::2], strict=True))  # path -> A, M, D or T
    files = sorted(status)
    restore = [p for p in files if status[p] != "A"]
    added = [p for p in files if status[p] == "A"]
    look = ["status", "--porcelain=v1", "-z", "--no-renames", "--ignore-submodules=all", "--", *files]
    tree = ["ls-tree", "-z", parent, "--", *restore]
    blobs = [["cat-file", "blob", f"{parent}:{p}"] for p in restore]
    looked, *rest = repo.ask(look, *([tree, *blobs] if restore else []), env=NO_OPTIONAL_LOCKS)
    dirty = sorted({e[3:] for e in _z(_ok(look, looked)) if len(e) > 3})
    if dirty:
        return UndoResult(False, f"uncommitted changes to {', '.join(dirty)} would be lost; commit or stash "
                                 "them first")
    root = ConfinedRoot(repo.top)
    # Every restored file is written beside its place first; if one cannot be (a full disk, a
    # link on the way), none is put in place and nothing, HEAD included, has changed.
    try:
        modes = _modes(_ok(tree, rest[0])) if restore else {}
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
    for entry in _z(listing):
        meta, _, path = entry.partition("\t")
        mode, kind, _ = meta.split(" ", 2)
        found[path] = (int(mode, 8), kind)
    return found


def _finish_undo(repo: _Repo, parent: str, by_git: Sequence[str], restored: Sequence[str],
                 added: Sequence[str]) -> list[str]:
    """The undo's work after HEAD moved, in one sandbox: the index follows the restored files
    and forgets the added ones, and git writes the files only it writes (links, submodules).
    What failed, in words."""
    resets = [["reset", "-q", parent, "--", *batch] for batch in _chunks(restored)]
    removals = [["rm", "-q", "--cached", "--ignore-unmatch", "--", *batch] for batch in _chunks(added)]
    checkouts = [["checkout", parent, "--", *batch] for batch in _chunks(by_git)]
    if not (resets or removals or checkouts):
        return []
    try:
        results = _change(repo.top, repo.writer(), *resets, *removals, *checkouts)
    except GitRefused as exc:
        return [f"git's index was not updated ({exc}); `git reset -q` once it can be"]
    problems = []
    try:
        for command, result in zip([*resets, *removals], results, strict=False):
            _ok(command, result, ok=(0, 1) if command[0] == "reset" else (0,))
    except GitRefused as exc:
        problems.append(f"git's index was not updated ({exc}); `git reset -q` once it can be")
    try:
        for command, result in zip(checkouts, results[len(resets) + len(removals):], strict=False):
            _ok(command, result)
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
