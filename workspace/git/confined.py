"""The one seam every git process scribe starts goes through: GitPython's `Git`, confined.

GitPython starts git from one method, `Git.execute`: its commands (`git.status(...)`), the
persistent `cat-file --batch` reader its object database keeps open, the diff-tree behind
`Commit.diff`, its version check. It runs whatever `Git.GIT_PYTHON_GIT_EXECUTABLE` names, in
scribe's whole environment. `ConfinedGit` is GitPython's `Git` with `execute` replaced:

- the program is the git this machine has (`git_executable`: an absolute path, never one a
  relative PATH entry finds, nor one inside the workspace, nor what GIT_PYTHON_GIT_EXECUTABLE
  names); GitPython's command line is accepted only when it starts with GitPython's own name for
  git, so nothing but git is ever run through it;
- it runs confined by the call's `Confinement`: in bubblewrap under the workspace's Protection
  (read-only for a question; the workspace and its git folders, not their configuration, writable
  for a commit or an undo), or, where there is no sandbox, as scribe's child with scribe's own
  process made unreadable first;
- in the environment the caller gives it, which run.py builds from `git_environment` (no secret,
  no GIT_* variable of scribe's environment but those naming the person's config files, identity
  and config; nothing bash reads at start-up) and the overrides that turn off every program the
  repository's configuration names; GitPython's own additions (`update_environment`, which its
  `Repo` fills from GIT_DIR, GIT_COMMON_DIR and GIT_OBJECT_DIRECTORY) are not passed: git finds
  the repository from the folder it runs in;
- every process it started (the persistent reader too) ends when the call does (`close`, which
  `confined()` calls on the way out) or when its timeout passes, whichever comes first.

What GitPython would start without `execute` fails instead of running git unconfined: it is
imported with its import-time check (`git.refresh()`, which runs `git version`) pointed at
UNRUNNABLE, and its class-level executable stays there, so a `Commit.trailers` (which calls Popen
itself) or a `Repo.init` cannot start git. scribe never calls GitPython's `IndexFile.commit`,
which runs the repository's hooks itself, nor lets its `Repo` read a repository's configuration
in Python (`ConfinedRepository`): git reads it, in the sandbox.

Several commands asked at one moment run in one process (`batch`: batch.sh, in bash), so they
share one sandbox: starting bubblewrap costs more than most of the git commands it runs."""

from __future__ import annotations

import functools
import io
import os
import re
import secrets
import subprocess
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

from scribe.workspace.sandbox.bwrap import Confinement
from scribe.workspace.sandbox.environment import (
    hide_own_process,
    trusted_program,
    url_passwords,
    without_secrets,
)

GIT_TIMEOUT_S = 60
# What GitPython itself is told git is: no process can be started from it (exec fails with EACCES
# on anything but a regular file, for root too), so whatever GitPython would start without
# ConfinedGit.execute fails instead of running outside the sandbox.
UNRUNNABLE = os.devnull
# GIT_* variables of scribe's environment that its git keeps: which config files are the person's,
# their identity, and where git stops looking for a repository (and, see git_environment, their
# own command-line config, which scribe's own entries follow). GIT_CONFIG_PARAMETERS is not among them: git reads it
# after GIT_CONFIG_COUNT, so it would override scribe's own.
KEPT_GIT_VARIABLES = frozenset({
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
})
_COUNT = "GIT_CONFIG_COUNT"
# What bash reads as it starts (a batch runs in bash): a file to source, options, functions.
_SHELL_STARTUP = frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "CDPATH", "GLOBIGNORE"})
_END_GRACE_S = 1.0  # a reader whose stdin closed has this long to end before it is killed
_BATCH = resources.files(__package__).joinpath("batch.sh").read_text(encoding="utf-8")
_import_lock = threading.Lock()


class GitMissing(OSError):
    """git is not installed (or cannot be started)."""


@dataclass(frozen=True)
class GitResult:
    status: int
    out: bytes
    err: bytes


def _import_gitpython() -> ModuleType:
    """GitPython, imported so that its import-time check starts nothing: `git.refresh()` runs
    `git version` from PATH (or GIT_PYTHON_GIT_EXECUTABLE) with scribe's whole environment, so it
    is pointed at UNRUNNABLE and told to stay quiet, and scribe's environment is put back after."""
    with _import_lock:
        names = ("GIT_PYTHON_GIT_EXECUTABLE", "GIT_PYTHON_REFRESH")
        saved = {name: os.environ.get(name) for name in names}
        os.environ.update(GIT_PYTHON_GIT_EXECUTABLE=UNRUNNABLE, GIT_PYTHON_REFRESH="quiet")
        try:
            import git
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        # A quiet failed check leaves "git" there, which GitPython would look up on PATH.
        git.Git.GIT_PYTHON_GIT_EXECUTABLE = UNRUNNABLE
        return git


if TYPE_CHECKING:
    import git as gitpython
    from git import Git as _Git
    from git import Repo as _Repo
else:
    gitpython = _import_gitpython()
    _Git, _Repo = gitpython.Git, gitpython.Repo


def git_environment(base: Mapping[str, str]) -> dict[str, str]:
    """What of `base` scribe's git (and whatever git starts) gets: no secret, no GIT_* variable
    but KEPT_GIT_VARIABLES (GIT_DIR, GIT_INDEX_FILE, GIT_EXEC_PATH, GIT_EXTERNAL_DIFF, GIT_PAGER,
    GIT_SSH_COMMAND, GIT_TRACE, GitPython's GIT_PYTHON_*, ... are not scribe's git's: it sets
    what it needs itself), nothing bash reads as it starts. The person's own command-line config
    (GIT_CONFIG_COUNT and its KEY_n/VALUE_n pairs) is kept whole, renumbered, but for an entry
    whose value carries credentials in a URL: a KEY_n name is no secret, and a pair without its
    other half would make git refuse to run at all."""
    kept = {name: value for name, value in without_secrets(base).items()
            if (not name.startswith("GIT_") or name in KEPT_GIT_VARIABLES) and name != _COUNT
            and name not in _SHELL_STARTUP and not name.startswith("BASH_FUNC_")}
    pairs = _command_line_config(base)
    kept.update({f"GIT_CONFIG_{part}_{n}": value for n, (key, value) in enumerate(pairs)
                 for part, value in (("KEY", key), ("VALUE", value))})
    if pairs:
        kept[_COUNT] = str(len(pairs))
    return kept


def _command_line_config(base: Mapping[str, str]) -> list[tuple[str, str]]:
    """The GIT_CONFIG_COUNT entries of `base` that carry no credentials; none when the count is
    not one git would take (git itself refuses to run then; scribe's own entries replace them)."""
    try:
        count = int(base.get(_COUNT, "0"))
    except ValueError:
        return []
    pairs = []
    for n in range(max(count, 0)):
        key, value = base.get(f"GIT_CONFIG_KEY_{n}"), base.get(f"GIT_CONFIG_VALUE_{n}")
        if key is None or value is None:
            return []
        if not url_passwords(value):
            pairs.append((key, value))
    return pairs


def git_executable(cwd: Path) -> str:
    """The git scribe runs in `cwd`: the first on PATH in an absolute folder outside `cwd`."""
    found = _on_path("git", os.environ.get("PATH", os.defpath), str(cwd))
    if found is None:
        raise GitMissing("git is not installed (none on PATH outside the workspace)")
    return found


@functools.lru_cache(maxsize=64)
def _on_path(name: str, path: str, outside: str) -> str | None:
    return trusted_program(name, (Path(outside),), path)


class ConfinedGit(_Git):
    """GitPython's git for one call of scribe's: every process it starts runs git_executable()
    confined by `box` in `env`, and ends when the call does (`close`)."""

    def __init__(self, cwd: Path, box: Confinement, env: Mapping[str, str], *, writes: bool = False,
                 binds: Sequence[str] = (), timeout: float = GIT_TIMEOUT_S) -> None:
        super().__init__(os.fspath(cwd))
        self.cwd = cwd
        self.box = box if writes else box.questions()
        self.writes = writes
        self.binds = tuple(binds)
        self.timeout = timeout
        self.program = git_executable(cwd)
        self._env = dict(env)
        self._started: list[subprocess.Popen[bytes]] = []
        self._timers: list[threading.Timer] = []

    # -- GitPython's way in ------------------------------------------------------------------------

    def execute(  # one implementation for all of GitPython's overloads
            self, command: str | Sequence[Any], istream: int | IO[bytes] | None = None,
            with_extended_output: bool = False, with_exceptions: bool = True, as_process: bool = False,
            output_stream: IO[bytes] | None = None, stdout_as_string: bool = True,
            kill_after_timeout: float | None = None, with_stdout: bool = True, universal_newlines: bool = False,
            shell: bool | None = None, env: Mapping[str, str] | None = None,
            max_chunk_size: int = io.DEFAULT_BUFFER_SIZE, strip_newline_in_stdout: bool = True,
            **subprocess_kwargs: Any) -> Any:
        """GitPython's `execute`, for git only, confined: its results as GitPython gives them."""
        if output_stream is not None or universal_newlines or shell or not with_stdout or subprocess_kwargs:
            raise TypeError("scribe's git takes git's output whole, as bytes, and never through a shell")
        argv = [self.program, *self._arguments(command)]
        proc = self._start(argv, istream, env)
        if as_process:  # a reader GitPython keeps (cat-file --batch) or drains itself (diff-tree)
            self._end_after(proc, self.timeout)
            return self.AutoInterrupt(proc, argv)
        limit = self.timeout if kill_after_timeout is None else min(self.timeout, kill_after_timeout)
        result = self._finish(proc, argv, limit)
        out, err = result.out, result.err.removesuffix(b"\n")
        if strip_newline_in_stdout:
            out = out.removesuffix(b"\n")
        if with_exceptions and result.status != 0:
            raise gitpython.GitCommandError(argv, result.status, err, out)
        stdout: str | bytes = out.decode("utf-8", "surrogateescape") if stdout_as_string else out
        stderr = err.decode("utf-8", "surrogateescape")
        return (result.status, stdout, stderr) if with_extended_output else stdout

    def _arguments(self, command: str | Sequence[Any]) -> list[str]:
        """git's arguments in GitPython's command line; anything that does not run git is refused."""
        if isinstance(command, str | bytes) or not command or command[0] != self.GIT_PYTHON_GIT_EXECUTABLE:
            raise ValueError(f"scribe's git runs git and nothing else, not {command!r}")
        return [os.fsdecode(arg) if isinstance(arg, bytes) else str(arg) for arg in command[1:]]

    # -- scribe's way in ---------------------------------------------------------------------------

    def batch(self, commands: Sequence[Sequence[str]], *, stop: bool = False) -> list[GitResult]:
        """Each of `commands` (git's arguments), one after another in one process, so in one
        sandbox: a result each, or, with `stop`, up to the first that fails."""
        if len(commands) == 1:  # no shell needed to run one
            argv = [self.program, *commands[0]]
            return [self._finish(self._start(argv, None, None), argv, self.timeout)]
        shell = _on_path("bash", os.environ.get("PATH", os.defpath), str(self.cwd))
        if shell is None:
            raise GitMissing("bash is not installed (scribe asks git several questions at once through it)")
        token = secrets.token_hex(16)
        argv = [shell, "-c", _BATCH, "scribe-git", token, self.program, "1" if stop else "0"]
        for command in commands:
            argv += [str(len(command)), *command]
        done = self._finish(self._start(argv, None, None), [self.program, *commands[0]], self.timeout)
        outputs = re.split(b"\0" + token.encode() + rb" (\d+)\0", done.out)
        errors = done.err.split(b"\0" + token.encode() + b"\0")
        results = [GitResult(int(status), out, err)
                   for out, status, err in zip(outputs[0::2], outputs[1::2], errors, strict=False)]
        if not results or (len(results) != len(commands) and not (stop and results[-1].status)):
            said = done.err.decode("utf-8", errors="replace").strip()[:200]
            raise GitMissing(f"git cannot be run here: {said or f'exit status {done.status}'}")
        return results

    def close(self) -> None:
        """End every process this git started that still runs, and wait for each: a reader's stdin
        is closed, so git ends it and bubblewrap ends with it, whole, before GitPython (whose
        readers these are) would send a signal to bubblewrap alone."""
        for timer in self._timers:
            timer.cancel()
        for proc in self._started:
            _end(proc)
        self.clear_cache()  # GitPython's handles on the readers, all ended now
        self._started.clear()
        self._timers.clear()

    # -- the one place a process starts ----------------------------------------------------------

    def _start(self, argv: Sequence[str], stdin: int | IO[bytes] | None,
               env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
        if not self.box.sandboxed:
            hide_own_process()  # what git starts would run as scribe's own user
        try:
            proc = subprocess.Popen(self.box.confine(argv, writes=self.writes, binds=self.binds), cwd=self.cwd,
                                    env={**self._env, **(env or {})},
                                    stdin=subprocess.DEVNULL if stdin is None else stdin,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise GitMissing(f"git cannot be run: {exc}") from None
        self._started.append(proc)
        return proc

    def _finish(self, proc: subprocess.Popen[bytes], argv: Sequence[str], timeout: float) -> GitResult:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end(proc, grace=0)  # the whole sandbox ends with what ran too long
            raise subprocess.TimeoutExpired(list(argv), timeout) from None
        return GitResult(proc.returncode, out, err)

    def _end_after(self, proc: subprocess.Popen[bytes], timeout: float) -> None:
        timer = threading.Timer(timeout, _end, (proc, 0))
        timer.daemon = True
        timer.start()
        self._timers.append(timer)


def _end(proc: subprocess.Popen[bytes], grace: float = _END_GRACE_S) -> None:
    """End `proc` (bubblewrap ends everything in its sandbox with it): its stdin closed, then
    killed if it has not ended within `grace`; reaped either way."""
    if proc.poll() is None:
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass  # it ended meanwhile and the pipe broke: nothing left to say to it
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


@contextmanager
def confined(cwd: Path, box: Confinement, env: Mapping[str, str], *, writes: bool = False,
             binds: Sequence[str] = (), timeout: float = GIT_TIMEOUT_S) -> Iterator[ConfinedGit]:
    """A ConfinedGit for the block; every process it started has ended when the block does."""
    git = ConfinedGit(cwd, box, env, writes=writes, binds=binds, timeout=timeout)
    try:
        yield git
    finally:
        git.close()


class ConfinedRepository(_Repo):
    """GitPython's `Repo` at a git folder git named, over a ConfinedGit: its objects (commits,
    trees, blobs) are read through that git's `cat-file --batch`, its diffs through its diff-tree.
    The repository's configuration is never read in Python (GitPython's parser would follow its
    includes anywhere, with no timeout): both of Repo's readers give an empty configuration."""

    def __init__(self, git_dir: Path, git: ConfinedGit) -> None:
        self._confined_git = git
        super().__init__(os.fspath(git_dir), expand_vars=False)

    def GitCommandWrapperType(self, working_dir: Any = None) -> ConfinedGit:  # type: ignore[override]  # noqa: N802
        """How GitPython's Repo makes its git: here, the ConfinedGit it was given."""
        return self._confined_git

    def commit_at(self, sha: str) -> Any:
        """The commit a full sha names, as git gave it: GitPython's `commit()` would start a
        second reader (`cat-file --batch-check`) only to learn what kind of object that is."""
        return gitpython.Commit(self, bytes.fromhex(sha))

    def config_reader(self, config_level: Any = None) -> Any:
        return gitpython.GitConfigParser([], read_only=True)

    def _config_reader(self, config_level: Any = None, git_dir: Any = None) -> Any:
        return gitpython.GitConfigParser([], read_only=True)
