"""How many processes one sandboxed command may run and how much memory each may map, and what
enforces that on this machine.

- Memory: an address-space limit (RLIMIT_AS, `ulimit -v`) set in the sandbox before the command
  starts, on every process of it. It bounds each process, not their sum; only
  CAP_SYS_RESOURCE could raise it, and no command has it.
- Processes, which RLIMIT_NPROC alone cannot bound: it counts every process of the user, and
  root is exempt from it. So:
  - where bubblewrap gives the sandbox a user namespace of its own (as a normal user), the
    kernel counts RLIMIT_NPROC per user namespace, so `ulimit -u` there bounds the command's
    processes (threads count too) and nothing else;
  - otherwise (as root), a pids cgroup made for the command, where scribe may make one (in
    cgroup v1's pids hierarchy, or in v2 where the pids controller is on for the children of
    scribe's own cgroup): the command starts inside it and `pids.max` bounds its whole tree;
  - otherwise the number of processes is not bounded (only by the timeout), and `scribe config`
    says so.
A command that meets the process limit is told in its result which limit stopped it.
"""

from __future__ import annotations

import errno
import functools
import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import count
from pathlib import Path

DEFAULT_PROCESSES = 4096
DEFAULT_MEMORY_MB = 16384
_RMDIR_WAIT_S = 1.0
_numbers = count(1)
# Starts the command inside its cgroup: $0 the cgroup folder, then the command line.
CGROUP_ENTRY = 'echo 0 > "$0/cgroup.procs" && exec "$@"'


@dataclass(frozen=True)
class Limits:
    """The limits commands run under, and how the process limit is enforced here."""

    processes: int = 0  # 0: not limited
    memory_mb: int = 0  # 0: not limited
    processes_by: str = ""  # "user namespace" or "cgroup"; "" when not enforced
    cgroup: str = ""  # where commands' pids cgroups are made
    why_not: str = ""  # why processes are not bounded, when they are not

    def shell(self) -> str:
        """The `ulimit` lines that start the sandbox's wrapper."""
        lines = []
        if self.memory_mb:
            lines.append(f"ulimit -S -H -v {self.memory_mb * 1024}")
        if self.processes and self.processes_by == "user namespace":
            lines.append(f"ulimit -S -H -u {self.processes}")
        return "".join(f"{line} 2>/dev/null; " for line in lines)

    def reached(self, left: int, refused_forks: int) -> str | None:
        """The line a command's result gets when the process limit stopped it: `refused_forks`
        from its cgroup, or, in a user namespace (which counts none), `left`, the processes
        still running when the command's shell ended (bubblewrap's init and the wrapper are two more)."""
        if self.processes_by == "cgroup" and refused_forks:
            return (f"stopped by the process limit: command_max_processes = {self.processes} (a pids cgroup) "
                    f"refused {refused_forks} new process{'es' * (refused_forks != 1)}")
        if self.processes_by == "user namespace" and left + 3 >= self.processes:
            return (f"stopped by the process limit: command_max_processes = {self.processes} (RLIMIT_NPROC in "
                    f"the sandbox's user namespace) was reached, {left} processes running")
        return None

    def describe(self) -> str:
        processes = (f"at most {self.processes} processes and threads per command (by a {self.processes_by})"
                     if self.processes_by else f"processes not limited ({self.why_not})")
        memory = (f"at most {self.memory_mb} MiB of address space per process" if self.memory_mb
                  else "memory not limited (command_max_memory_mb = 0)")
        return f"{processes}; {memory}"

    def record(self) -> dict[str, object]:
        return {"processes": self.processes if self.processes_by else None, "processes_by": self.processes_by or None,
                "memory_mb": self.memory_mb or None, **({"why_not": self.why_not} if self.why_not else {})}

    @contextmanager
    def cgroup_for_command(self) -> Iterator[CommandCgroup | None]:
        """A pids cgroup for one command when that is how processes are bounded here, removed after."""
        if self.processes_by != "cgroup":
            yield None
            return
        made = CommandCgroup.make(Path(self.cgroup), self.processes)
        try:
            yield made
        finally:
            if made is not None:
                made.remove()


@dataclass(frozen=True)
class CommandCgroup:
    folder: Path

    @classmethod
    def make(cls, base: Path, processes: int) -> CommandCgroup | None:
        _remove_stale(base)
        folder = base / f"scribe-{os.getpid()}-{next(_numbers)}"
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(f"{processes}\n")
        except OSError:
            _rmdir(folder)
            return None
        return cls(folder)

    def prefix(self) -> list[str]:
        """What the sandbox's command line starts with, so that it begins inside the cgroup."""
        return ["sh", "-c", CGROUP_ENTRY, str(self.folder)]

    def refused_forks(self) -> int:
        """How many times the command met pids.max."""
        try:
            for line in (self.folder / "pids.events").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "max" and value.strip().isdigit():
                    return int(value)
        except OSError:
            pass  # no events file: nothing known to have been refused
        return 0

    def remove(self) -> None:
        deadline = time.monotonic() + _RMDIR_WAIT_S
        while not _rmdir(self.folder) and time.monotonic() < deadline:
            time.sleep(0.02)  # the namespace's last processes are still being reaped


def _rmdir(folder: Path) -> bool:
    try:
        folder.rmdir()
    except FileNotFoundError:
        return True
    except OSError as exc:
        return exc.errno not in (errno.EBUSY, errno.ENOTEMPTY)
    return True


def _remove_stale(base: Path) -> None:
    """Cgroups a scribe that ended (SIGKILL) left behind, empty now."""
    try:
        entries = [p for p in base.iterdir() if p.name.startswith("scribe-")]
    except OSError:
        return
    for entry in entries:
        pid = entry.name.split("-")[1]
        if pid.isdigit() and int(pid) != os.getpid() and not Path(f"/proc/{pid}").exists():
            _rmdir(entry)


def limits_here(processes: int, memory_mb: int, *, own_user_namespace: bool, as_root: bool) -> Limits:
    """The limits asked for, and what can enforce the process limit on this machine."""
    memory_mb = max(memory_mb, 0)
    if processes <= 0:
        return Limits(0, memory_mb, why_not="command_max_processes = 0")
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    if own_user_namespace and not as_root:
        return Limits(processes if hard == resource.RLIM_INFINITY else min(processes, hard), memory_mb,
                      "user namespace")
    base = pids_cgroup()
    if base is not None:
        return Limits(processes, memory_mb, "cgroup", str(base))
    why = ("scribe runs as root, which RLIMIT_NPROC does not bound, and no pids cgroup can be made here "
           "(/sys/fs/cgroup is not writable, or the pids controller is not delegated)" if as_root else
           "bubblewrap gives commands no user namespace of their own here, and no pids cgroup can be made")
    return Limits(processes, memory_mb, why_not=why)


@functools.cache
def pids_cgroup() -> Path | None:
    """A cgroup folder in which scribe can make a pids cgroup per command, if there is one."""
    for base in _candidates():
        probe = base / f"scribe-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        try:
            if (probe / "pids.max").exists():
                return base
        finally:
            _rmdir(probe)
    return None


def _candidates() -> list[Path]:
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in memberships:
        _, controllers, path = line.split(":", 2)
        if controllers == "" or "pids" in controllers.split(","):
            for mount_root, point in _cgroup_mounts(mounts, v2=controllers == "", controller="pids"):
                if path == mount_root or path.startswith(mount_root.rstrip("/") + "/"):
                    base = Path(point) / path[len(mount_root.rstrip("/")):].lstrip("/")
                    if controllers == "" and not _v2_pids(base):
                        continue
                    found.append(base)
    return found


def _cgroup_mounts(mounts: list[str], *, v2: bool, controller: str) -> Iterator[tuple[str, str]]:
    """(root inside the hierarchy, mount point) of the cgroup mounts of one kind."""
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        kind, options = tail[0], tail[2].split(",")
        if (v2 and kind == "cgroup2") or (not v2 and kind == "cgroup" and controller in options):
            yield fields[3], fields[4].replace("\\040", " ")


def _v2_pids(base: Path) -> bool:
    """Whether children of `base` get the pids controller (scribe never turns it on itself)."""
    try:
        return "pids" in (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False
