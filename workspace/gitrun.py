"""The one way scribe runs git: with every program a repository's own configuration could make
git start turned off, whatever `.git/config` (and the files it includes) says.

A repository is not trusted to choose what runs on scribe's side: its config can name an
fsmonitor, a hooks folder, filter, textconv, diff and merge drivers, editors, pagers, ssh and
credential helpers, and git would start them with scribe's whole environment. So:
- always: `core.fsmonitor=false` and `core.hooksPath=/dev/null` (no hook of any name runs,
  wherever the config points the hooks);
- for every key that names a program and is set by the repository (the `local` and `worktree`
  scopes, includes of them too): an inert value ("" where git then runs nothing, ":" for an
  editor), then the person's own values for that key (system, global, environment) again, so
  their own git-lfs or gpg still apply.
The overrides travel as GIT_CONFIG_COUNT/KEY/VALUE variables, git's command-line scope, which
beats every config file, reaches the git processes git itself starts (a submodule's status), and
takes keys whose subsection holds a `=` safely. `user.name`/`user.email` and the rest are untouched.

Callers that diff also pass `--no-textconv --no-ext-diff`: an inert textconv fails closed.
Every git call in scribe goes through `run_git` or `neutral_env` (gitpython's included, see
workspace/git.py); tests/workspace/test_git_safety.py checks that no other module starts git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

GIT_TIMEOUT_S = 60
# Always set, whoever's config says otherwise.
FIXED = (("core.fsmonitor", "false"), ("core.hooksPath", os.devnull))
# (section, variable) of every key whose value git runs as a program (man git-config); a
# subsection, when there is one, may be anything. "*" matches any variable of the section.
PROGRAM_KEYS = frozenset({
    ("core", "fsmonitor"), ("core", "hookspath"), ("core", "pager"), ("core", "editor"), ("core", "sshcommand"),
    ("core", "askpass"), ("core", "gitproxy"), ("core", "alternaterefscommand"), ("sequence", "editor"),
    ("credential", "helper"), ("gpg", "program"), ("gpg", "defaultkeycommand"),
    ("diff", "external"), ("diff", "command"), ("diff", "textconv"), ("merge", "driver"),
    ("filter", "clean"), ("filter", "smudge"), ("filter", "process"), ("pager", "*"), ("alias", "*"),
    ("difftool", "cmd"), ("difftool", "path"), ("mergetool", "cmd"), ("mergetool", "path"),
    ("uploadpack", "packobjectshook"), ("remote", "uploadpack"), ("remote", "receivepack"),
    ("interactive", "difffilter"), ("sendemail", "smtpserver"), ("sendemail", "tocmd"), ("sendemail", "cccmd"),
    ("sendemail", "headercmd"), ("sendemail", "sendmailcmd"), ("imap", "tunnel"), ("browser", "cmd"),
    ("browser", "path"), ("man", "cmd"), ("man", "path"), ("guitool", "cmd"), ("hook", "command"),
    ("submodule", "update"), ("trailer", "command"), ("trailer", "cmd"), ("instaweb", "httpd"),
})
# The value that makes git run nothing for a key, where "" does not.
INERT = {"core.fsmonitor": "false", "core.editor": ":", "sequence.editor": ":", "pager": "false",
         "submodule": "none"}
REPOSITORY_SCOPES = frozenset({"local", "worktree"})
_COUNT = "GIT_CONFIG_COUNT"


class GitMissing(OSError):
    """git is not installed (or cannot be started)."""


def names_a_program(key: str) -> bool:
    """Whether git runs the value of config `key` (as `git config -l` spells it) as a program."""
    section, _, rest = key.partition(".")
    variable = rest.rpartition(".")[2]
    section = section.lower()
    return (section, variable.lower()) in PROGRAM_KEYS or (section, "*") in PROGRAM_KEYS


def _inert(key: str) -> str:
    section, _, rest = key.partition(".")
    return INERT.get(f"{section.lower()}.{rest.lower()}", INERT.get(section.lower(), ""))


def _git() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitMissing("git is not installed")
    return found


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


def _config_entries(cwd: Path, env: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(scope, key, value) of every config entry git sees in `cwd`, includes followed, in order.
    Listing config runs no program."""
    try:
        done = subprocess.run([_git(), "config", "--list", "--show-scope", "-z"], cwd=cwd, env=dict(env),
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitMissing(f"git cannot be run: {exc}") from None
    fields = done.stdout.split(b"\0")
    entries = []
    for scope, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = os.fsdecode(entry).partition("\n")
        entries.append((os.fsdecode(scope), key, value))
    return entries


def neutral_overrides(cwd: Path, base: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """The command-line config that turns off every program the repository at `cwd` names."""
    env = _with_config(os.environ if base is None else base, FIXED)
    entries = _config_entries(cwd, env)
    fixed = {key.lower() for key, _ in FIXED}
    chosen = {key for scope, key, _ in entries if scope in REPOSITORY_SCOPES and names_a_program(key)
              and key.lower() not in fixed}
    pairs = list(FIXED)
    for key in sorted(chosen):
        pairs.append((key, _inert(key)))
        # The person's own values again, in git's order (for a list such as credential.helper,
        # the "" above empties it first).
        pairs += [(key, value) for scope, k, value in entries if k == key and scope not in REPOSITORY_SCOPES]
    return pairs


def neutral_env(cwd: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment (`base`, by default scribe's own) to run git in `cwd` with."""
    source = os.environ if base is None else base
    return _with_config(source, neutral_overrides(cwd, source))


def run_git(cwd: Path, *args: str, env: Mapping[str, str] | None = None,
            timeout: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess[bytes]:
    """`git args` in `cwd`, its output captured, with no repository program turned on. `env`
    adds variables (GIT_INDEX_FILE, GIT_OPTIONAL_LOCKS). Raises GitMissing without git,
    subprocess.TimeoutExpired past `timeout`; a non-zero exit is the caller's to judge."""
    full = neutral_env(cwd, {**os.environ, **(env or {})})
    try:
        return subprocess.run([_git(), *args], cwd=cwd, env=full, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except OSError as exc:
        raise GitMissing(f"git cannot be run: {exc}") from None



def query_in(cwd: Path) -> Callable[[Sequence[str]], tuple[int, bytes]]:
    """`run_git` in `cwd` as memory's GitQuery: arguments -> (exit status, stdout)."""
    def query(args: Sequence[str]) -> tuple[int, bytes]:
        try:
            done = run_git(cwd, *args)
        except subprocess.TimeoutExpired as exc:
            raise GitMissing(f"git took more than {exc.timeout:g} s") from None
        return done.returncode, done.stdout
    return query
