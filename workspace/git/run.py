"""How scribe runs git: the way a command runs. In the sandbox (bubblewrap, under the
workspace's Protection: read-only for a question, the workspace writable for a commit or an
undo), with an environment that holds no secret, and with every program a repository's own
configuration could make git start turned off, whatever `.git/config` (and the files it
includes) says. Where there is no sandbox (no bubblewrap, or `sandbox = false`), the last two
still hold. Every process starts in confined.py's `ConfinedGit`, GitPython's git confined; this
module says what it runs with, and is what the rest of scribe calls.

A repository is not trusted to choose what runs on scribe's side: its config can name an
fsmonitor, a hooks folder, filter, textconv, diff and merge drivers, editors, pagers, ssh and
credential helpers, and git would start them. So, besides the sandbox:
- always: `core.fsmonitor=false` and `core.hooksPath=/dev/null` (no hook of any name runs,
  wherever the config points the hooks);
- for every key that names a program and is set by the repository (the `local` and `worktree`
  scopes, includes of them too): an inert value ("" where git then runs nothing, ":" for an
  editor), then the person's own values for that key (system, global, environment) again, so
  their own git-lfs or gpg still apply.
The overrides travel as GIT_CONFIG_COUNT/KEY/VALUE variables, git's command-line scope, which
beats every config file, reaches the git processes git itself starts (a submodule's status), and
takes keys whose subsection holds a `=` safely. `user.name`/`user.email` and the rest are untouched.
A submodule's or a nested repository's own configuration is not listed here: callers keep git
out of them (`--ignore-submodules`), and the sandbox holds whatever one names.

Each call starts its own sandbox, and several commands asked at one moment go in one
(`run_git_batch`, `run_git_questions`). Listing the configuration is a git call of its own, so
its result is kept per folder until one of the files it came from (or could come from:
includes, `.git`, HEAD) changes.

Callers that diff also pass `--no-textconv --no-ext-diff`: an inert textconv fails closed.
Every git call in scribe goes through this module (or `objects`, GitPython's repository over
the same git); tests/workspace/test_git_safety.py checks that no other module starts git.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from scribe.workspace.git.confined import (
    GIT_TIMEOUT_S,
    ConfinedRepository,
    GitMissing,
    GitResult,
    confined,
    git_environment,
)
from scribe.workspace.git.programs import inert, names_a_program
from scribe.workspace.sandbox.bwrap import Confinement, read_only

__all__ = ["GIT_TIMEOUT_S", "GitMissing", "GitResult", "neutral_env", "objects", "run_git",
           "run_git_batch", "run_git_questions", "scratch"]

# Always set, whoever's config says otherwise.
FIXED = (("core.fsmonitor", "false"), ("core.hooksPath", os.devnull))
REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_COUNT = "GIT_CONFIG_COUNT"
_CACHE_MAX = 64
# Variables that change which configuration git reads (besides GIT_CONFIG*).
_DISCOVERY = frozenset({"HOME", "XDG_CONFIG_HOME", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"})


def _with_config(base: Mapping[str, str], pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """`base` with `pairs` appended to its command-line config (after any the person set)."""
    env = dict(base)
    try:
        start = int(env.get(_COUNT, "0"))
    except ValueError:
        start = 0  # git itself refuses a malformed count; ours replaces it
    for offset, (key, value) in enumerate(pairs):
        env[f"GIT_CONFIG_KEY_{start + offset}"] = key
        env[f"GIT_CONFIG_VALUE_{start + offset}"] = value
    env[_COUNT] = str(start + len(pairs))
    env["GIT_TERMINAL_PROMPT"] = "0"  # never wait on a question nobody sees
    return env


# -- what the configuration names, kept until its files change ----------------------------------


class _Listing:
    """One `git config --list` of a folder: its entries, and the files it depends on."""

    def __init__(self, cwd: Path, fields: list[bytes], env: Mapping[str, str]) -> None:
        self.entries: list[tuple[str, str, str]] = []  # (scope, key, value)
        depends: list[str] = []
        for scope, origin, entry in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
            key, _, value = os.fsdecode(entry).partition("\n")
            where = os.fsdecode(origin)
            self.entries.append((os.fsdecode(scope), key, value))
            source = _located(cwd, where.removeprefix("file:")) if where.startswith("file:") else None
            if source is not None:
                depends.append(source)
            lowered = key.lower()
            if lowered == "include.path" or (lowered.startswith("includeif.") and lowered.endswith(".path")):
                depends.append(_included(value, source, env))
        self.depends = tuple(dict.fromkeys([*depends, *_repository_markers(cwd)]))
        self.signature = file_signature(self.depends)


def _located(cwd: Path, path: str) -> str:
    """A config file as git names it: absolute, or relative to the top of the work tree (which
    may be a parent of `cwd`)."""
    if os.path.isabs(path):
        return path
    for folder in (cwd, *cwd.parents):
        if os.path.lexists(folder / path):
            return str(folder / path)
    return str(cwd / path)


def _included(value: str, source: str | None, env: Mapping[str, str]) -> str:
    if value.startswith("~/"):
        return os.path.join(env.get("HOME", "~"), value[2:])
    if os.path.isabs(value) or source is None:
        return value
    return os.path.join(os.path.dirname(source), value)


def _repository_markers(cwd: Path) -> list[str]:
    """What decides which repository, branch and worktree git finds from `cwd`: a `.git`
    appearing, or HEAD moving to a branch an `includeIf "onbranch:"` names."""
    markers = []
    for folder in (cwd, *cwd.parents):
        dot = folder / ".git"
        markers += [str(dot), str(dot / "HEAD")]
        if os.path.lexists(dot):
            break
    return markers


def file_signature(paths: Sequence[str]) -> tuple[tuple[int, int, int, int] | None, ...]:
    """How each path stands: a file by its inode, size and times (git rewrites a config or a ref
    by renaming a new file over it: a new inode); a folder by its inode alone (its times move with
    every file git writes in it, `.git` with each commit); None when it is not there."""
    stats: list[tuple[int, int, int, int] | None] = []
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            stats.append(None)
            continue
        if stat.S_ISDIR(st.st_mode):
            stats.append((st.st_ino, -1, 0, 0))
        else:
            stats.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(stats)


_listings: dict[tuple[str, frozenset[tuple[str, str]]], _Listing] = {}
_listings_lock = threading.Lock()


def _environment_key(env: Mapping[str, str]) -> frozenset[tuple[str, str]]:
    """The part of the environment that changes what git's configuration says."""
    return frozenset((k, v) for k, v in env.items() if k.startswith("GIT_CONFIG") or k in _DISCOVERY)


_LIST_CONFIG = ["config", "--list", "--show-scope", "--show-origin", "-z"]


def _listing(cwd: Path, env: Mapping[str, str], box: Confinement) -> _Listing:
    key = (str(cwd), _environment_key(env))
    with _listings_lock:
        known = _listings.get(key)
    if known is not None and file_signature(known.depends) == known.signature:
        return known
    try:
        with confined(cwd, box, _with_config(env, FIXED)) as git:
            [listed] = git.batch([_LIST_CONFIG])
    except subprocess.TimeoutExpired as exc:
        raise GitMissing(f"git took more than {exc.timeout:g} s") from None
    return _keep(cwd, env, listed)


def _keep(cwd: Path, env: Mapping[str, str], listed: GitResult) -> _Listing:
    made = _Listing(cwd, listed.out.split(b"\0"), env)
    with _listings_lock:
        if len(_listings) >= _CACHE_MAX:
            _listings.clear()
        _listings[(str(cwd), _environment_key(env))] = made
    return made


def run_git_questions(cwd: Path, commands: Sequence[Sequence[str]], *, box: Confinement | None = None,
                      timeout: float = GIT_TIMEOUT_S) -> list[GitResult]:
    """Questions whose git runs no program, whatever the configuration says (rev-parse,
    symbolic-ref, config --file), asked in one read-only sandbox together with the listing of
    the configuration, which is kept for the git calls that follow: a session's first questions
    cost one sandbox, not two."""
    box = box or read_only()
    env = git_environment(os.environ)
    with confined(cwd, box, _with_config(env, FIXED), timeout=timeout) as git:
        listed, *answers = git.batch([_LIST_CONFIG, *commands])
    _keep(cwd, env, listed)
    return answers


def neutral_overrides(cwd: Path, base: Mapping[str, str] | None = None,
                      box: Confinement | None = None) -> list[tuple[str, str]]:
    """The command-line config that turns off every program the repository at `cwd` names."""
    source = git_environment(os.environ if base is None else base)
    entries = _listing(cwd, source, box or read_only()).entries
    fixed = {key.lower() for key, _ in FIXED}
    chosen = {key for scope, key, _ in entries if scope in REPOSITORY_SCOPES and names_a_program(key)
              and key.lower() not in fixed}
    pairs = list(FIXED)
    for key in sorted(chosen):
        pairs.append((key, inert(key)))
        # The person's own values again, in git's order (for a list such as credential.helper,
        # the "" above empties it first).
        pairs += [(key, value) for scope, k, value in entries if k == key and scope not in REPOSITORY_SCOPES]
    return pairs


def neutral_env(cwd: Path, base: Mapping[str, str] | None = None, box: Confinement | None = None) -> dict[str, str]:
    """The environment to run git in `cwd` with: what git_environment keeps of `base` (by
    default scribe's own) and the overrides that turn off the repository's programs."""
    source = git_environment(os.environ if base is None else base)
    return _with_config(source, neutral_overrides(cwd, source, box))


# -- running it ---------------------------------------------------------------------------------


def run_git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = GIT_TIMEOUT_S,
            box: Confinement | None = None, writes: bool = False,
            binds: Sequence[str] = ()) -> subprocess.CompletedProcess[bytes]:
    """`git args` in `cwd`, its output captured, confined by `box` (None: the read-only sandbox
    where bubblewrap works here), with no secret in its environment and no repository program
    turned on. `env` adds variables (GIT_INDEX_FILE, GIT_OPTIONAL_LOCKS); `writes`: git may write
    the workspace and its git folders; `binds`: folders of scribe's own it may write (a temporary
    index). Raises GitMissing without git, subprocess.TimeoutExpired past `timeout`; a non-zero
    exit is the caller's to judge."""
    box = box or read_only()
    full = {**neutral_env(cwd, box=box), **(env or {})}
    with confined(cwd, box, full, writes=writes, binds=binds, timeout=timeout) as git:
        status, out, err = git.execute([git.GIT_PYTHON_GIT_EXECUTABLE, *args], with_extended_output=True,
                                       with_exceptions=False, stdout_as_string=False,
                                       strip_newline_in_stdout=False)
        return subprocess.CompletedProcess([git.program, *args], status, out, err.encode("utf-8", "surrogateescape"))


def run_git_batch(cwd: Path, commands: Sequence[Sequence[str]], *, env: Mapping[str, str] | None = None,
                  timeout: float = GIT_TIMEOUT_S, box: Confinement | None = None, writes: bool = False,
                  binds: Sequence[str] = (), stop: bool = False) -> list[GitResult]:
    """Several git commands in one sandbox, one after another, as `run_git` runs one: a result
    each, or, with `stop`, up to the first that fails."""
    box = box or read_only()
    full = {**neutral_env(cwd, box=box), **(env or {})}
    with confined(cwd, box, full, writes=writes, binds=binds, timeout=timeout) as git:
        return git.batch(commands, stop=stop)


@contextmanager
def objects(top: Path, git_dir: Path, box: Confinement | None = None,
            timeout: float = GIT_TIMEOUT_S) -> Iterator[ConfinedRepository]:
    """GitPython's repository at `git_dir` (as git named it) for reading objects: commits, trees,
    blobs and diffs, through git confined as a question's (run from `top`). The `cat-file --batch`
    reader it keeps open, and everything else it started, has ended when the block does."""
    box = box or read_only()
    with confined(top, box, neutral_env(top, box=box), timeout=timeout) as git:
        repository = ConfinedRepository(git_dir, git)
        try:
            yield repository
        finally:
            repository.close()


@contextmanager
def scratch() -> Iterator[Path]:
    """A folder of scribe's own that a git call may be given to write (`binds`: a temporary
    index), removed after."""
    with tempfile.TemporaryDirectory(prefix="scribe-index-") as folder:
        yield Path(folder)
