"""The sandbox commands run in, for real (bubblewrap is installed here and by .ci/run): what a
command can see and write, and the plain account when there is no sandbox."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

import pytest

from conftest import git
from helpers import agent_on, run_scribe
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.settings.values import Settings
from scribe.tools.base import ToolContext
from scribe.tools.registry import builtin_tools, run_tool
from scribe.workspace.git.folders import command_protection
from scribe.workspace.sandbox.protection import Protection

SANDBOXED = command_protection(Path("/")).sandboxed
needs_sandbox = pytest.mark.skipif(not SANDBOXED, reason="bubblewrap cannot create namespaces here")


def run(protection: Protection, command: str, workspace: Path) -> tuple[str, int | None]:
    ctx = ToolContext(workspace=workspace, protection=protection)
    out = run_tool(builtin_tools(), "run_command", {"command": command}, ctx)
    return out.text, out.exit_code


@needs_sandbox
def test_a_command_sees_only_its_own_processes(workspace: Path) -> None:
    text, code = run(command_protection(workspace), "ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '; "
                     "echo; ls /proc | grep '^[0-9]' | tr '\\n' ' '", workspace)
    count, init, pids = text.splitlines()
    # bubblewrap's init, the wrapper, bash, ls and grep at most: not scribe, not the machine
    assert code == 0 and int(count) <= 6, text
    assert Path(init.split()[0]).name == "bwrap"
    assert str(os.getpid()) not in pids.split()  # this test's own process is not there to see


@needs_sandbox
def test_only_the_workspace_and_a_private_tmp_are_writable(workspace: Path) -> None:
    # Both probes are this run's own, and removed whatever happens: were the sandbox broken,
    # the command would write them on the machine.
    outside = Path(f"/var/tmp/scribe-sandbox-probe-{os.getpid()}")  # outside the workspace and /tmp
    private = Path(f"/tmp/scribe-private-probe-{os.getpid()}")
    try:
        text, code = run(command_protection(workspace),
                         f"touch {outside}; echo in > inside.txt; echo private > {private}; cat {private}",
                         workspace)
        assert "Read-only file system" in text and "private" in text, text
        assert not outside.exists()
        assert not private.exists()  # the command's /tmp was its own
    finally:
        outside.unlink(missing_ok=True)
        private.unlink(missing_ok=True)
    assert (workspace / "inside.txt").read_text() == "in\n"


@needs_sandbox
def test_the_state_folder_is_hidden(workspace: Path) -> None:
    state = workspace / ".scribe"
    state.mkdir()
    (state / "notes.md").write_text("what the sessions learnt\n")
    text, code = run(command_protection(workspace, state_dir=state),
                     "ls -A .scribe | wc -l; touch .scribe/x 2>&1 | grep -c 'Read-only'", workspace)
    assert text.split() == ["0", "1"], text
    assert not (state / "x").exists()


@needs_sandbox
def test_git_commits_work_in_a_worktree_whose_git_folder_is_outside(workspace: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    git(workspace, "worktree", "add", "--quiet", "-b", "side", str(tree))
    protection = command_protection(tree)
    assert str((workspace / ".git").resolve()) in protection.writable
    text, code = run(protection, "git -c user.name=t -c user.email=t@e.invalid commit -q --allow-empty -m inside "
                                 "&& git log -1 --format=%s", tree)
    assert (text, code) == ("inside\n", 0)


CAP_SYS_ADMIN = 21  # the capability mount and umount need


@needs_sandbox
def test_a_command_cannot_undo_its_sandbox(workspace: Path) -> None:
    """What would let a command unmount its private /proc and see the machine's: CAP_SYS_ADMIN
    now, or gained later by running a setuid-root binary such as mount (no_new_privs forbids it).
    Read from /proc, never tried: an unmount that got through would take the machine's /proc
    with it wherever the command was not in a namespace of its own."""
    text, code = run(command_protection(workspace),
                     "grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status; "
                     "readlink /proc/self/ns/mnt /proc/self/ns/pid", workspace)
    assert code == 0, text
    *status, mnt, pid = text.splitlines()
    fields = dict(line.split(":\t") for line in status)
    for held in ("CapEff", "CapPrm"):
        assert not int(fields[held], 16) >> CAP_SYS_ADMIN & 1, text
    assert fields["NoNewPrivs"] == "1", text
    # Even with the capability, an unmount would reach only the sandbox's own mounts.
    assert mnt != os.readlink("/proc/self/ns/mnt") and pid != os.readlink("/proc/self/ns/pid"), text


def test_without_bubblewrap_commands_still_run_and_the_reason_is_plain(workspace: Path, tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    cases = {
        "cannot create its namespaces here: bwrap: No permissions to create new namespace":
            command_protection(workspace, bwrap=str(broken)),
        "is not installed": command_protection(workspace, bwrap=""),
        "turned off: sandbox = false": command_protection(workspace, enabled=False),
    }
    if command_protection(workspace, bwrap="").reason != "bubblewrap (bwrap) is not installed":
        cases.pop("is not installed")  # bwrap="" falls back to the PATH lookup where it is installed
    for reason, protection in cases.items():
        assert not protection.sandboxed and reason in protection.reason
        assert protection.lines()[0] == f"commands: not sandboxed ({protection.reason})"
        assert protection.record()["sandbox"] == "none"
        assert run(protection, "echo still runs", workspace) == ("still runs\n", 0)


def test_without_a_sandbox_scribe_makes_its_process_unreadable_to_commands(workspace: Path) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    run(command_protection(workspace, enabled=False), "true", workspace)
    assert libc.prctl(3, 0, 0, 0, 0) == 0  # PR_GET_DUMPABLE: not dumpable, so /proc/PID/environ is closed


@needs_sandbox
def test_the_protection_is_recorded_in_the_session_and_shown_by_config(
        workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeMessagesServer([Reply.text("hi")]) as server:
        agent = agent_on(server, workspace, Settings(watch_files=False), monkeypatch)
        try:
            recorded = agent.session.header.protection
        finally:
            agent.close()
            agent.session.close()
    assert recorded["sandbox"] == "bubblewrap" and recorded["private_proc"] is True
    assert str(workspace.resolve()) in recorded["writable"]
    assert str((workspace / ".scribe").resolve()) in recorded["hidden"]

    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": os.environ["PATH"]}
    shown = run_scribe(["config"], workspace, env)
    assert shown.code == 0
    assert "commands: sandboxed with bubblewrap" in shown.out
    assert "  covers: a private /proc and PID namespace" in shown.out
    assert "  does not cover: the network (shared)" in shown.out
    assert "  scribe's own git runs in the sandbox too" in shown.out
    assert f"  git folders (never written by the file tools): {workspace.resolve() / '.git'}" in shown.out
    assert "  limits: at most 4096 processes and threads per command" in shown.out
    off = run_scribe(["config"], workspace, {**env, "SCRIBE_SANDBOX": "false"})
    assert "commands: not sandboxed (turned off: sandbox = false)" in off.out
    assert ("  scribe's own git runs outside a sandbox too: without secrets in its environment and with every "
            "program the repository's config names turned off") in off.out

