"""Git facts about the workspace, and the git side of auto-commit, diff and undo. Absent git, or
a folder that is not a repository, is a normal case, not an error.

Every git call runs through workspace/git/run.py, as a command runs (sandboxed, no secrets, no
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
- `undo_commit` (workspace/git/undo.py) takes back only scribe's commit at HEAD, and only the
  files it changed.
- `session_diff` reads through a copy of the index; the real one is untouched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from scribe.workspace.git.commitlock import LockWaitedTooLong, commit_lock
from scribe.workspace.git.folders import ask_git, command_protection
from scribe.workspace.git.run import GitMissing, GitResult, run_git, run_git_batch, scratch
from scribe.workspace.sandbox.bwrap import Confinement

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
    # The git folder whose info/exclude git reads for this work tree: its own `.git`, or the one
    # a linked worktree (a `.bare` layout's too) shares with its repository, when that repository
    # names this work tree back; None: neither (not a repository, or a `.git` file pointing at a
    # repository that is not this work tree's: scribe writes nothing there).
    exclude_dir: Path | None = None


@dataclass(frozen=True)
class Repository:
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
        results = run_changes(self.top, self.writer(), *commands, env=env, binds=binds, stop=True)
        for command, result in zip(commands, results, strict=False):
            output_of(command, result)
        return results


def _ask(cwd: Path, commands: Sequence[Sequence[str]], box: Confinement | None, *,
         env: dict[str, str] | None = None, binds: Sequence[str] = ()) -> list[GitResult]:
    try:
        return run_git_batch(cwd, [[*_PATHS, *c] if c[0] != "check-ignore" else ["-c", "core.quotepath=off", *c]
                                   for c in commands], env=env, box=box, binds=binds)
    except (GitMissing, subprocess.TimeoutExpired) as exc:
        raise GitUnavailable(f"git cannot be run: {exc}") from None


def output_of(command: Sequence[str], result: GitResult, ok: Sequence[int] = (0,)) -> str:
    """The command's output as text, or GitRefused with git's own last line."""
    if result.status not in ok:
        text = (result.err or result.out).decode("utf-8", errors="replace").strip().splitlines()
        raise GitRefused(f"git {command[0]} failed: {text[-1] if text else f'exit {result.status}'}")
    return result.out.decode("utf-8", errors="surrogateescape")


def _located(workspace: Path, result: GitResult) -> Repository | None:
    """The repository whose work tree's top is `workspace`, from rev-parse's answer."""
    lines = os.fsdecode(result.out).splitlines()
    if result.status != 0 or len(lines) != 2 or Path(lines[1]).resolve() != workspace.resolve():
        return None
    return Repository(workspace, Path(lines[0]), None)


def open_repository(workspace: Path, box: Confinement | None, *more: Sequence[str],
          env: dict[str, str] | None = None) -> tuple[Repository, list[GitResult]]:
    """The repository (as folders.ask_git knows it: most often without another sandbox),
    and the answers to `more` questions, asked together; GitUnavailable when `workspace` is not
    the top of a work tree."""
    if not workspace.is_dir():
        raise GitUnavailable(f"{workspace} is not a git repository")
    root = workspace.resolve()
    asked = ask_git(root, box)
    if asked.git_dir is None or asked.top is None or asked.top.resolve() != root:
        raise GitUnavailable(f"{workspace} is not a git repository")
    return (Repository(workspace, asked.git_dir, box, asked.common_dir),
            _ask(workspace, more, box, env=env) if more else [])


def git_state(workspace: Path, box: Confinement | None = None) -> GitState:
    """HEAD's commit (None: no commit yet) and branch (None: detached), as git says; both None
    when the workspace is not the top of a work tree. Shares its sandbox with the session's
    other first questions (folders.ask_git)."""
    root = workspace.resolve()
    asked = ask_git(root, box)
    if asked.top is None or asked.top.resolve() != root:
        return GitState(None, None)
    return GitState(asked.head, asked.branch, _exclude_dir(root, asked.git_dir, asked.common_dir))


def _exclude_dir(root: Path, git_dir: Path | None, common_dir: Path | None) -> Path | None:
    """Where `git_state` says info/exclude is: in the work tree's own `.git` folder, or in the
    common folder of a linked worktree whose registration (`worktrees/NAME/gitdir`) names this
    work tree's `.git` file, as `git worktree` itself links them."""
    if git_dir is None or common_dir is None:
        return None
    own = root / ".git"
    if git_dir.resolve() == own.resolve() and own.is_dir() and not own.is_symlink():
        return own  # (a `commondir` in it that leads elsewhere is not followed)
    try:
        linked = Path((git_dir / "gitdir").read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        return None
    registered = git_dir.resolve().parent == (common_dir / "worktrees").resolve()
    return common_dir if registered and linked.resolve() == own.resolve() else None


@dataclass(frozen=True)
class WorkspaceGit:
    """scribe's git in one folder, as the watcher asks it (its GitQuery): where git says the work
    tree's top is (the session's first questions already asked it: `ask_git`'s answer, kept), and
    a command run as `run_git` runs it."""

    cwd: Path
    box: Confinement | None = None

    def top(self) -> Path | None:
        return ask_git(self.cwd.resolve(), self.box).top

    def __call__(self, args: Sequence[str]) -> tuple[int, bytes]:
        try:
            done = run_git(self.cwd, *args, box=self.box)
        except subprocess.TimeoutExpired as exc:
            raise GitMissing(f"git took more than {exc.timeout:g} s") from None
        return done.returncode, done.stdout


def query_in(cwd: Path, box: Confinement | None = None) -> WorkspaceGit:
    """The watcher's GitQuery for `cwd`, git confined by `box` (None: the read-only sandbox)."""
    return WorkspaceGit(cwd, box)


def is_repository(workspace: Path, box: Confinement | None = None) -> bool:
    """Whether `workspace` is the top of a git work tree."""
    try:
        open_repository(workspace, box)
    except GitUnavailable:
        return False
    return True


def in_progress(git_dir: Path) -> str | None:
    return next((what for name, what in IN_PROGRESS.items() if (git_dir / name).exists()), None)


def nul_split(out: str) -> list[str]:
    return [p for p in out.split("\0") if p]


def chunks(items: Sequence[str], size: int = 500) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# -- auto-commit ------------------------------------------------------------------------------


def dirty_paths(workspace: Path, box: Confinement | None = None) -> set[str] | None:
    """Files with uncommitted changes (staged, unstaged, or untracked and not ignored);
    None when the workspace is not a repository."""
    status = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"]
    try:
        _, [answer] = open_repository(workspace, box, status, env=NO_OPTIONAL_LOCKS)
        out = output_of(status, answer)
    except (GitUnavailable, GitRefused):
        return None
    return {entry[3:] for entry in nul_split(out) if len(entry) > 3}


def ignored_untracked(workspace: Path, paths: Sequence[str], box: Confinement | None = None) -> set[str]:
    """Which of `paths` git ignores (tracked files are never "ignored")."""
    if not paths:
        return set()
    commands = [["check-ignore", "--", *batch] for batch in chunks(paths)]
    _, answers = open_repository(workspace, box, *commands)
    hits: set[str] = set()
    for command, answer in zip(commands, answers, strict=True):
        hits.update(p for p in output_of(command, answer, ok=(0, 1)).splitlines() if p)
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
def serialised(lock: Path | None) -> Iterator[None]:
    try:
        with commit_lock(lock):
            yield
    except LockWaitedTooLong as exc:
        raise GitRefused(f"{exc}; nothing changed") from None


def index_locked(git_dir: Path) -> str | None:
    lock = git_dir / "index.lock"
    if lock.exists():
        return (f"git's index is locked ({lock} exists: another git command is running, or one crashed; "
                "remove the file if none runs)")
    return None


@contextmanager
def _temporary_index(copy_of: Path | None = None) -> Iterator[tuple[dict[str, str], Path]]:
    """A temporary index (the environment that names it) in a folder of scribe's own, which the
    git calls that use it are given to write (`binds`)."""
    with scratch() as folder:
        index = folder / "index"
        if copy_of is not None and copy_of.exists():
            shutil.copyfile(copy_of, index)
        yield {"GIT_INDEX_FILE": str(index)}, folder


def commit_paths(workspace: Path, paths: Sequence[str], message: str, *, lock: Path | None = None,
                 box: Confinement | None = None) -> Commit | None:
    """Commit exactly `paths` as they are on disk, on top of HEAD; None if that changes nothing.
    The person's staged changes to other files stay staged and are not part of it.
    Either HEAD moves and a Commit is returned (with a warning if the index could not follow),
    or GitRefused is raised and nothing moved. `lock`: see workspace/git/commitlock.py.
    Three sandboxes: the tree built in a temporary index, the commit made, HEAD moved."""
    if not workspace.is_dir():
        raise GitRefused(f"{workspace} is not a git repository")
    writer = box if box is not None else command_protection(workspace)
    with serialised(lock), _temporary_index() as (env, scratch_folder):
        # Without a commit yet, read-tree fails and the temporary index starts empty: the same.
        where, head, tree, empty, _, *added, built = run_changes(
            workspace, writer, _LOCATE, ["rev-parse", "-q", "--verify", "HEAD^{commit}"],
            ["rev-parse", "-q", "--verify", "HEAD^{tree}"], _EMPTY_TREE, ["read-tree", "HEAD"],
            *(["add", "--", *batch] for batch in chunks(paths)), ["write-tree"], env=env, binds=[str(scratch_folder)])
        repo = _located(workspace, where)
        if repo is None:
            raise GitRefused(f"{workspace} is not a git repository")
        busy = in_progress(repo.git_dir)
        if busy:
            raise GitRefused(f"{busy} is in progress; nothing committed")
        locked = index_locked(repo.git_dir)
        if locked:
            raise GitRefused(f"{locked}; nothing committed")
        for result in added:
            output_of(["add"], result)
        new_tree = output_of(["write-tree"], built).strip()
    parent = head.out.decode().strip() if head.status == 0 else None
    if parent is not None and tree.out.decode().strip() == new_tree:
        return None
    listed, made = run_changes(workspace, writer,
                           ["diff-tree", "-r", "-z", "--name-only", "--no-renames", parent or output_of(_EMPTY_TREE, empty).strip(),
                            new_tree], ["commit-tree", new_tree, *(["-p", parent] if parent else []), "-m", message])
    changed = nul_split(output_of(["diff-tree"], listed))
    sha = output_of(["commit-tree"], made).strip()
    # Refused (nothing moved) when HEAD is no longer `parent`: a commit made meanwhile. Then the
    # real index takes the committed content of these paths, so `git status` is clean for them;
    # if it cannot, the commit still stands and the person is told.
    moved, *reset = run_changes(workspace, writer,
                            ["update-ref", "-m", f"scribe: {message.splitlines()[0]}", "HEAD", sha, parent or ""],
                            *(["reset", "-q", sha, "--", *batch] for batch in chunks(changed)), stop=True)
    output_of(["update-ref"], moved)
    return Commit(sha, parent, changed, _index_warning(changed, reset))


def run_changes(workspace: Path, box: Confinement, *commands: Sequence[str], env: dict[str, str] | None = None,
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
            output_of(["reset"], result, ok=(0, 1))
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
    repo, _ = open_repository(workspace, box)
    name = f"{base[:10]} (where the session began)" if base else "the empty repository the session began in"
    with _temporary_index(repo.git_dir / "index") as (env, folder):
        listing = ["ls-files", "-z", "--others", "--exclude-standard"]
        first = ["rev-parse", "-q", "--verify", f"{base}^{{commit}}"] if base else _EMPTY_TREE
        known, others = repo.ask(first, listing, env=env, binds=[str(folder)])
        if base is not None and known.status != 0:
            raise GitRefused(f"the session began at {base[:10]}, which this repository does not have")
        rev = base or output_of(_EMPTY_TREE, known).strip()
        untracked = nul_split(output_of(listing, others))
        # The index copy's intent-to-add entries write an empty blob: into a folder of scribe's
        # own, which reads the repository's objects through it, not into the repository.
        own = folder / "objects"
        own.mkdir()
        env.update(GIT_OBJECT_DIRECTORY=str(own),
                   GIT_ALTERNATE_OBJECT_DIRECTORIES=str((repo.common_dir or repo.git_dir) / "objects"))
        diff = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all",
                *(["--stat=100"] if stat else []), rev, "--"]
        *added, shown = repo.ask(*(["add", "--intent-to-add", "--", *batch] for batch in chunks(untracked)), diff,
                                 env=env, binds=[str(folder)])
        for result in added:
            output_of(["add"], result)
        return SessionDiff(rev, name, output_of(diff, shown), untracked)
