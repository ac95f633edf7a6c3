"""The file system says no: a full disk, a read-only or immutable log, a state folder that is a
file. Each is one line and its documented exit code, with every acknowledged line kept.

The faults are real: a small tmpfs, a read-only bind mount, `chattr +i`; they need root (the
test machines are root; elsewhere these tests are skipped)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import AssistantEvent, InterruptEvent, ToolResultEvent, UsageEvent, UserEvent
from scribe.log.jsonl import read_log
from scribe.log.verify import verify_bytes

EXIT_STORAGE = 4  # docs/usage.md, "Exit codes"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts and chattr need root")


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 512 KiB tmpfs: room for a session's first lines, not for a megabyte of output."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mount))
    try:
        yield mount
    finally:
        sh("umount", "-l", str(mount))


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) >= 1
    return lines[-1]


@needs_root
def test_a_full_disk_ends_the_run_with_one_line_and_keeps_every_acknowledged_line(
        workspace: Path, home: Path, small_disk: Path) -> None:
    big = tool_use_block("run_command", {"command": "seq 1 400000"})  # 2.7 MB of output
    with FakeMessagesServer([Reply([big]), Reply.text("back again")]) as server:
        env = scribe_env(server.base_url, home, SCRIBE_HOME=str(small_disk))
        ran = run_scribe(["run", "-p", "full-auto", "count to a lot"], workspace, env)
        assert ran.code == EXIT_STORAGE, ran.err
        line = one_line(ran.err)
        [log] = sorted((small_disk / "sessions").glob("*.jsonl"))
        assert line.startswith(f"scribe: cannot write the session log {log}: No space left on device"), line
        assert len(server.requests) == 1
        # Whole lines only: the one that did not fit is gone, everything before it is there.
        read = read_log(log)
        assert not read.problems and not read.torn_tail
        assert [type(e) for e in read.events[1:]] == [UserEvent, AssistantEvent, UsageEvent]
        assert verify_bytes(log.read_bytes()).ok

        sh("mount", "-o", "remount,size=16m", str(small_disk))  # room again: the session continues
        again = run_scribe(["run", "-c", "try again"], workspace, env)
        assert again.code == 0, again.err
        assert "back again" in again.out
    events = read_log(log).events
    assert any(isinstance(e, InterruptEvent) and e.tool_use_ids == [big["id"]] for e in events)
    assert not any(isinstance(e, ToolResultEvent) for e in events)
    assert verify_bytes(log.read_bytes()).ok


@needs_root
@pytest.mark.parametrize("how", ["read-only bind mount", "chattr +i"])
def test_an_unwritable_log_is_refused_with_one_line_and_left_as_it_was(workspace: Path, home: Path, how: str) -> None:
    with FakeMessagesServer([Reply.text("first")]) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "hello"], workspace, env).code == 0
        [log] = session_logs(workspace)
        before = log.read_bytes()
        sessions = log.parent
        if how == "chattr +i":
            sh("chattr", "+i", str(log))
            undo = ["chattr", "-i", str(log)]
            reason = "Operation not permitted"
        else:
            sh("mount", "--bind", str(sessions), str(sessions))
            sh("mount", "-o", "remount,ro,bind", str(sessions))
            undo = ["umount", str(sessions)]
            reason = "Read-only file system"
        try:
            ran = run_scribe(["run", "-c", "again"], workspace, env)
            shown = run_scribe(["log", "show"], workspace, env)
        finally:
            sh(*undo)
    assert ran.code == EXIT_STORAGE, ran.err
    line = one_line(ran.err)
    assert line.startswith(f"scribe: cannot write session {log.stem}") and line.endswith(reason), line
    assert log.read_bytes() == before
    assert len(server.requests) == 1  # refused before any call
    assert shown.code == 0 and "first" in shown.out  # reading needs no write


def test_scribe_home_at_a_file_is_one_line_and_a_missing_one_is_made(workspace: Path, home: Path,
                                                                     tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    for args in (["run", "hi"], ["log", "list"], ["log", "show"]):
        ran = run_scribe(args, workspace, scribe_env("http://127.0.0.1:9", home, SCRIBE_HOME=str(a_file)))
        assert ran.code == 2, (args, ran.err)
        assert one_line(ran.err) == f"scribe: SCRIBE_HOME {a_file} is not a folder", (args, ran.err)
    inside_a_file = a_file / "state"
    ran = run_scribe(["run", "hi"], workspace, scribe_env("http://127.0.0.1:9", home, SCRIBE_HOME=str(inside_a_file)))
    assert ran.code == 2 and one_line(ran.err) == f"scribe: SCRIBE_HOME {inside_a_file} is not a folder", ran.err

    missing = tmp_path / "new" / "state"
    with FakeMessagesServer([Reply.text("made")]) as server:
        ran = run_scribe(["run", "hi"], workspace, scribe_env(server.base_url, home, SCRIBE_HOME=str(missing)))
    assert ran.code == 0 and "made" in ran.out, ran.err
    assert len(list((missing / "sessions").glob("*.jsonl"))) == 1
    shutil.rmtree(missing)
