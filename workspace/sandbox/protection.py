"""Where commands run, and what that protects: a bubblewrap sandbox where the platform allows
it, or the plain process with what can be had without one, and a plain account of either.

In the sandbox a command gets a PID namespace with its own /proc (scribe's process, its
environment and every other process are out of sight), the workspace, `allowed_paths` and the
repository's git folders writable (git's own configuration, hooks and pointers in them read-only,
and `.git` pinned in place: `GitFolders`, which workspace/git/folders.py finds), a private /tmp,
the state folder (`.scribe/`) and the account's folder (the log key and the seal records:
log/account.py) hidden and the rest of the file system read-only, and limits on its processes and
memory (limits.py). Network
is shared, as without a sandbox. When scribe runs as root the sandbox keeps only the
capabilities a container runtime grants by default: with CAP_SYS_ADMIN a command could unmount
the private /proc and read the host's.

scribe's own git runs under the same Protection (`confine`): read-only for a question, with the
workspace and its git folders writable (their configuration not) for a commit or an undo.

Without bubblewrap (or where it cannot create namespaces, or with `sandbox = false`) commands
run as before; scribe makes its own process non-dumpable, so a command running as the same
(non-root) user cannot read its environment, and finds the command's leftovers by a marker
(see leftovers.py). `Protection.lines()` says which of the two is in force and what it does
not cover; the session event records it.

Which folders are the workspace's git folders is git's answer, asked in the read-only sandbox
before the Protection exists: `command_protection` takes what asks it (`FindGitFolders`,
workspace/git/folders.py's `git_folders`), so the sandbox sits below scribe's git, which runs
in it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from scribe.log.account import account_folder
from scribe.workspace.sandbox.bwrap import (
    Confinement,
    Plain,
    ReadOnly,
    account_args,
    base_args,
    bind_args,
    cap_args,
    find_bwrap,
    probe,
    read_only,
)
from scribe.workspace.sandbox.environment import can_hide_process, hide_own_process
from scribe.workspace.sandbox.limits import DEFAULT_MEMORY_MB, DEFAULT_PROCESSES, Limits, limits_here
from scribe.workspace.sandbox.runtime import own_python, program_needs

__all__ = ["FindGitFolders", "GitFolders", "Protection", "command_protection", "hide_own_process"]

# Runs inside the sandbox as its first process (PID 2, after bubblewrap's init): the command
# itself in a child bash, with the status pipe closed for it and its stderr the real one (the
# wrapper's own stderr is /dev/null while it waits, so a child killed by a signal does not add
# bash's "Segmentation fault" line). Then it counts the processes still alive in the namespace
# (all but init and itself), which die as it exits, and reports them on the status pipe so the
# result can say so. $1 is the command, $2 the status pipe's fd.
_WRAPPER = ('eval \'bash -c "$1" 2>&9 9>&- \'"$2"\'>&-\' 9>&2 2>/dev/null; s=$?; '
            'p=(/proc/[0-9]*); n=$((${#p[@]} - 2)); ((n > 0)) && printf "%d\\n" "$n" >&"$2"; exit $s')


@dataclass(frozen=True)
class GitFolders:
    """A workspace's git folders, as the sandbox binds them."""

    outside: tuple[Path, ...] = ()  # git folders outside the workspace that belong to it: writable
    pinned: tuple[Path, ...] = ()  # bound onto themselves: a command cannot move or replace them
    read_only: tuple[Path, ...] = ()  # configuration and programs, read-only to commands
    refused: tuple[str, ...] = ()  # a git folder not made writable, and why
    # Configuration entries missing when the sandbox was set up: a bind cannot keep a command from
    # creating one, so scribe removes any that appears once the command ended (Protection.sweep).
    absent: tuple[Path, ...] = ()
    # Every git folder of the workspace, as git names them: never written by the file tools.
    protected: tuple[Path, ...] = ()


class FindGitFolders(Protocol):
    """What asks git where a workspace's git folders are, git itself confined by `box`."""

    def __call__(self, workspace: Path, box: Confinement) -> GitFolders: ...


@dataclass(frozen=True)
class Protection:
    """What protects scribe and the machine from the commands it runs (and from its own git)."""

    sandbox: str  # "bubblewrap" or "none"
    workspace: str
    # Host paths a sandboxed command may write (besides its private /tmp).
    writable: tuple[str, ...] = ()
    # Paths a sandboxed command sees as an empty, read-only folder.
    hidden: tuple[str, ...] = ()
    # Git folders bound onto themselves (not movable), then git's configuration read-only in them.
    pinned: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    # Git folders that were not made writable, one line each with the reason.
    refused: tuple[str, ...] = ()
    # Git configuration entries that did not exist: removed if a command creates one (sweep).
    absent: tuple[str, ...] = ()
    # Why there is no sandbox, in words a person can act on.
    reason: str = ""
    bwrap: str = ""
    as_root: bool = False
    # Every git folder of the workspace, as git names them: the file tools never write there.
    git_folders: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    # Folders inside the real /tmp that a command sees read-only in its private one: the Python
    # scribe runs on, where it lives there (runtime.py).
    runtime: tuple[str, ...] = ()

    @property
    def sandboxed(self) -> bool:
        return self.sandbox == "bubblewrap"

    def argv(self, command: str, status_fd: int, prefix: Sequence[str] = ()) -> list[str]:
        """The command line that runs `command` under this protection. Inside the sandbox the
        count of processes the command left behind is written to `status_fd`. `prefix` starts
        the sandbox (a pids cgroup's entry, limits.py)."""
        if not self.sandboxed:
            return ["bash", "-c", command]
        return [*prefix, *self._args(writes=True, command=True), "--chdir", self.workspace,
                "--", "bash", "-c", self.limits.shell() + _WRAPPER, "scribe-command", command, str(status_fd)]

    def questions(self) -> Confinement:
        """Where scribe's git answers a question: the read-only sandbox every question of this
        process shares (nothing writable, the state folder not hidden), or the plain process."""
        return ReadOnly(self.bwrap, self.as_root) if self.sandboxed else Plain()

    def confine(self, argv: Sequence[str], *, writes: bool = False, binds: Sequence[str] = ()) -> list[str]:
        """The command line that runs scribe's own `argv` (git) as a command runs: in the sandbox,
        where nothing is writable but `binds` for a question, and the workspace and its git
        folders (not their configuration) for a commit or an undo (`writes`). /tmp is the real
        one, read-only, not a private one: the workspace or the person's home may be there."""
        if not self.sandboxed:
            return list(argv)
        return [*self._args(writes=writes, binds=binds), "--", *argv]

    def _args(self, *, writes: bool, binds: Sequence[str] = (), command: bool = False,
              sees: Sequence[str] = ()) -> list[str]:
        args = base_args(self.bwrap, private_tmp=command)
        if command:
            # Into the private /tmp, before anything writable: a venv inside the workspace stays
            # as writable as the rest of it.
            args += [a for path in dict.fromkeys([*self.runtime, *sees]) if os.path.isdir(path)
                     for a in ("--ro-bind", path, path)]
        if writes:
            args += [a for path in self.writable for a in ("--bind", path, path)]
            # Checked now, not when the protection was worked out: bubblewrap fails on a missing source.
            args += bind_args(self.pinned)
        args += bind_args(binds)
        for path in self.read_only if writes else ():  # without `writes` all of it is read-only already
            if os.path.exists(path):
                args += ["--ro-bind", path, path]
        for path in self.hidden:
            if Path(path).is_dir():  # bubblewrap would create a missing one, in the real workspace
                args += ["--tmpfs", path, "--remount-ro", path]
        args += account_args([*(self.writable if writes else ()), *binds])
        return [*args, *cap_args(self.as_root), *(["--setenv", "TMPDIR", "/tmp"] if command else [])]

    def wrap(self, argv: Sequence[str], cwd: str, path_variable: str | None = None) -> list[str]:
        """`argv` run directly (no shell) in `cwd` under this protection, its stdin and stdout
        passed through: how a program scribe starts because of the workspace (an MCP server it
        defines) runs as a command does. What its command line names in the real /tmp (its venv's
        interpreter, its script's folder) it sees there, read-only; `path_variable` is the PATH
        it finds its program on."""
        if not self.sandboxed:
            return list(argv)
        sees = program_needs(argv, cwd, path_variable)
        return [*self._args(writes=True, command=True, sees=sees), "--chdir", cwd, "--", *argv]

    def sweep(self) -> list[str]:
        """Remove the git configuration entries a sandboxed command created where there were none
        (a `commondir` would point git at a configuration of the command's choosing); what was
        removed. Called once the command ended, when every process it started has ended too."""
        removed = []
        for path in self.absent if self.sandboxed else ():
            entry = Path(path)
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            elif entry.exists() or entry.is_symlink():
                entry.unlink(missing_ok=True)
            else:
                continue
            removed.append(path)
        return removed

    def record(self) -> dict[str, Any]:
        """What the session event keeps."""
        record: dict[str, Any] = {"sandbox": self.sandbox, "private_proc": self.sandboxed,
                                  "secrets": "stripped from the environment, redacted by value",
                                  "network": "shared", "git_folders": list(self.git_folders),
                                  "scribe_git": "sandboxed" if self.sandboxed else "not sandboxed"}
        if self.sandboxed:
            record.update(writable=[*self.writable, "/tmp (private)"], hidden=[*self.hidden, str(account_folder())],
                          read_only="the rest of the file system", git_read_only=list(self.read_only),
                          limits=self.limits.record())
            if self.refused:
                record["refused"] = list(self.refused)
            if self.runtime:
                record["tmp_read_only"] = list(self.runtime)
        else:
            record.update(reason=self.reason, process_readable=self.as_root or not can_hide_process())
        return record

    def lines(self) -> list[str]:
        """What `scribe config` prints: what is in force, what it covers, what it does not."""
        secrets = ("secret-looking variables (by name, or holding credentials in a URL) are not passed to "
                   "commands, and their values and URL credentials are redacted from every tool's output")
        folders = ", ".join(self.git_folders) or "none here"
        if self.sandboxed:
            writable = ", ".join([*self.writable, "a private /tmp"])
            if self.runtime:
                writable += f" (showing, read-only, the Python scribe runs on: {', '.join(self.runtime)})"
            hidden = f"; {', '.join([*self.hidden, str(account_folder())])} hidden"
            git = ("; git's own configuration, hooks and pointers (config, hooks/, info/, the .git file) are "
                   "read-only, and .git cannot be moved or replaced" if self.read_only or self.pinned else "")
            return [
                "commands: sandboxed with bubblewrap" + (" (as root, with container default capabilities)"
                                                          if self.as_root else ""),
                "  covers: a private /proc and PID namespace (scribe's process and environment are out of "
                "sight); every process a command starts ends with it, and with scribe, even on SIGKILL; "
                f"writable: {writable}; the rest of the file system is read-only{hidden}{git}; {secrets}",
                f"  limits: {self.limits.describe()}",
                "  scribe's own git runs in the sandbox too (read-only to answer a question; the workspace "
                "and its git folders, not their configuration, writable to commit or undo), without secrets "
                "and with every program the repository's config names turned off",
                f"  git folders (never written by the file tools): {folders}",
                "  does not cover: the network (shared); files you can read (shell profiles, ~/.netrc, a "
                ".env in the workspace: redacted only where they hold a value scribe's environment "
                "holds too); what the workspace's own scripts do inside it",
                *(f"  refused: {line}" for line in self.refused),
            ]
        process = ("scribe's own process is not readable by commands (it is made non-dumpable)"
                   if not self.as_root and can_hide_process() else
                   "nothing keeps a command from reading scribe's process and its environment"
                   + (" (scribe runs as root)" if self.as_root else ""))
        return [
            f"commands: not sandboxed ({self.reason})",
            f"  covers: {secrets}; {process}; processes a command starts are found by a marker in their "
            "environment and ended with it, and with scribe, even on SIGKILL",
            "  scribe's own git runs outside a sandbox too: without secrets in its environment and with "
            "every program the repository's config names turned off, but a program git starts anyway "
            "(a git bug, a nested repository's config) would run with your rights",
            f"  git folders (never written by the file tools): {folders}",
            "  does not cover: commands write wherever you can, see every process and the network; a "
            "process that clears its environment (env -i) escapes the marker; files you can read; no "
            "limit on a command's processes or memory",
        ]


def command_protection(workspace: Path, git_folders: FindGitFolders, *, allowed_roots: Sequence[Path] = (),
                       state_dir: Path | None = None, enabled: bool = True, bwrap: str | None = None,
                       max_processes: int = DEFAULT_PROCESSES,
                       max_memory_mb: int = DEFAULT_MEMORY_MB) -> Protection:
    """The protection commands of this workspace get: the sandbox when it can be had, built
    around the git folders `git_folders` finds (asked in the read-only sandbox, or without one)."""
    root = os.geteuid() == 0
    base = str(workspace.resolve())
    found = (bwrap or find_bwrap()) if enabled else None
    probed = probe(found, root) if found else None
    folders = git_folders(workspace, read_only(probed is not None and probed.problem is None))
    protected = tuple(map(str, folders.protected))
    if not enabled:
        return Protection("none", base, reason="turned off: sandbox = false", as_root=root, git_folders=protected)
    if not found or probed is None:
        return Protection("none", base, reason="bubblewrap (bwrap) is not installed", as_root=root,
                          git_folders=protected)
    if probed.problem is not None:
        return Protection("none", base, reason=f"bubblewrap cannot create its namespaces here: {probed.problem}",
                          as_root=root, git_folders=protected)
    writable = _writable(workspace.resolve(), allowed_roots, folders.outside)
    hidden: tuple[str, ...] = ()
    if state_dir is not None:
        state = state_dir.resolve()
        # Never hide a folder that holds what commands must see.
        if not any(Path(p) == state or Path(p).is_relative_to(state) for p in writable):
            hidden = (str(state),)
    limits = limits_here(max_processes, max_memory_mb, own_user_namespace=probed.own_user_namespace, as_root=root)
    return Protection("bubblewrap", base, writable, hidden, tuple(map(str, folders.pinned)),
                      tuple(map(str, folders.read_only)), folders.refused, tuple(map(str, folders.absent)),
                      bwrap=found, as_root=root, git_folders=protected, limits=limits, runtime=own_python())


def _writable(workspace: Path, allowed_roots: Sequence[Path], git_outside: Sequence[Path]) -> tuple[str, ...]:
    paths: list[Path] = [workspace]
    # A worktree's or a submodule's git folder lives outside it; git commit must still work.
    for path in [*(Path(r).resolve() for r in allowed_roots), *git_outside]:
        if path.exists() and not any(path == p or path.is_relative_to(p) for p in paths):
            paths.append(path)
    return tuple(str(p) for p in paths)
