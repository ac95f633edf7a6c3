"""bubblewrap itself: finding it, whether it can make its namespaces here, the arguments every
sandbox starts with, and the smallest sandbox of all, `ReadOnly`: nothing writable, its own
/proc and PID namespace, and (as root) only a container's default capabilities. scribe asks
git about a workspace in that one before it knows the workspace's git folders
(workspace/git/folders.py); everything else runs under a Protection (protection.py).

A `Confinement` is where a program runs: bubblewrap or the plain process. Both hand git (or any
program) its command line through `confine`; it is the seam between the sandbox and scribe's git
(workspace/git/confined.py)."""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scribe.log.account import AccountFolderError, own_account_folder
from scribe.workspace.sandbox.environment import trusted_program

# Docker's default capability set, less CAP_MKNOD (a device node in the writable workspace
# would open the raw disk): enough for chown, setuid tools and binding low ports as root.
ROOT_CAPS = ("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID",
             "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SYS_CHROOT",
             "CAP_SETFCAP", "CAP_AUDIT_WRITE")
PROBE_TIMEOUT_S = 10.0
_USER_NS = "/proc/self/ns/user"


class Confinement(Protocol):
    """Where a program scribe starts runs."""

    @property
    def sandboxed(self) -> bool: ...

    def confine(self, argv: Sequence[str], *, writes: bool = False, binds: Sequence[str] = ()) -> list[str]:
        """The command line that runs `argv` here. `writes`: it may write the workspace and its
        git folders (as a command may); otherwise only `binds` (folders scribe made for it) are
        writable."""
        ...

    def questions(self) -> Confinement:
        """Where a program that writes nothing runs: the read-only sandbox, or the plain process."""
        ...


@dataclass(frozen=True)
class Probe:
    """What bubblewrap can do on this machine, for this user."""

    problem: str | None  # None: it can make its namespaces; else its first line of complaint
    # The sandbox has a user namespace of its own: a process limit (RLIMIT_NPROC) set in it
    # counts only the sandbox's processes, not every process of the user.
    own_user_namespace: bool = False


def find_bwrap() -> str | None:
    return trusted_program("bwrap")


def base_args(bwrap: str, *, private_tmp: bool = True) -> list[str]:
    """What every sandbox starts with: the whole file system read-only, a private /dev and /proc,
    a PID namespace of its own, ended with scribe; and, for a command, a private /tmp (scribe's
    own git sees the real one, read-only: a workspace or a home may be there). Every sandbox ends
    its mounts with `account_args`."""
    return [bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *(["--tmpfs", "/tmp"] if private_tmp else [])]


def account_args(writable: Sequence[str] = ()) -> list[str]:
    """What hides the account's folder (log/account.py: the log key and the seal records) from a
    sandbox: an empty, read-only tmpfs over it, given after every bind (a bind of the workspace or
    the home would show it again). The folder is made first if it is missing: a sandbox that
    outlives this call (the git server, an MCP server) would otherwise see it appear.

    When a writable folder holds it (a workspace that is the home), the folder's topmost parent
    below that one is bound read-only onto itself too: as a mount point it cannot be renamed, so a
    command cannot move the real folder aside and make a folder of its own, with a key of its
    own, where scribe looks for it."""
    try:
        folder = own_account_folder().resolve()
    except AccountFolderError:
        return []  # no key can be made either: there is nothing to hide
    args: list[str] = []
    for root in map(Path, writable):
        if folder != root and folder.is_relative_to(root):
            top = root / folder.relative_to(root).parts[0]
            if top != folder:
                args += ["--ro-bind", str(top), str(top)]
    return [*args, "--tmpfs", str(folder), "--remount-ro", str(folder)]


def cap_args(as_root: bool) -> list[str]:
    return ["--cap-drop", "ALL", *(a for cap in ROOT_CAPS for a in ("--cap-add", cap))] if as_root else []


def bind_args(binds: Sequence[str]) -> list[str]:
    """Folders bound writable at their own path (bubblewrap refuses a missing source)."""
    return [arg for path in binds if os.path.isdir(path) for arg in ("--bind", path, path)]


@functools.cache
def probe(bwrap: str, as_root: bool) -> Probe:
    """Whether bubblewrap can set up a sandbox here, and whether it gets a user namespace: asked
    once per process, of the read-only sandbox itself."""
    argv = ReadOnly(bwrap, as_root).confine(["readlink", _USER_NS])
    try:
        done = subprocess.run(argv, env={"PATH": os.environ.get("PATH", os.defpath)}, cwd="/",
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return Probe(f"bubblewrap did not answer within {PROBE_TIMEOUT_S:g} s")
    except OSError as exc:
        return Probe(f"bubblewrap cannot be run: {exc}")
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return Probe(lines[0] if lines else f"exit status {done.returncode}")
    try:
        ours = os.readlink(_USER_NS)
    except OSError:
        return Probe(None)
    return Probe(None, own_user_namespace=done.stdout.decode("utf-8", errors="replace").strip() != ours)


@dataclass(frozen=True)
class Plain:
    """No sandbox: the program runs as scribe's own child."""

    sandboxed = False

    def confine(self, argv: Sequence[str], *, writes: bool = False, binds: Sequence[str] = ()) -> list[str]:
        return list(argv)

    def questions(self) -> Confinement:
        return self


@dataclass(frozen=True)
class ReadOnly:
    """bubblewrap with nothing writable but `binds`."""

    bwrap: str
    as_root: bool
    sandboxed = True

    def confine(self, argv: Sequence[str], *, writes: bool = False, binds: Sequence[str] = ()) -> list[str]:
        if writes:
            raise ValueError("the read-only sandbox cannot run a program that writes; give it a Protection")
        return [*base_args(self.bwrap, private_tmp=False), *bind_args(binds), *account_args(binds),
                *cap_args(self.as_root), "--", *argv]

    def questions(self) -> Confinement:
        return self


def read_only(enabled: bool = True) -> Confinement:
    """The read-only sandbox where bubblewrap works here (and `enabled`), else the plain process."""
    found = find_bwrap() if enabled else None
    as_root = os.geteuid() == 0
    if found is None or probe(found, as_root).problem is not None:
        return Plain()
    return ReadOnly(found, as_root)
