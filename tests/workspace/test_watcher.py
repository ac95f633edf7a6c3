"""The workspace watcher: coalescing, attribution (the agent's own writes, its commands, the
person), what is ignored, and the loop draining it only at safe points.

Real watchdog tests wait for what they expect with a bounded poll, never a fixed sleep; a
"nothing reported" claim is checked by making a later, reported change (a sentinel) and
asserting it arrives alone.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import git
from helpers import agent_on
from scribe.agent.protocol import Notice, TurnEnded
from scribe.context.render import file_change_text, render
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, FileChangeEvent, ToolResultEvent, UserEvent
from scribe.settings.values import Settings
from scribe.workspace.git.repository import query_in
from scribe.workspace.watcher.changes import FileChange
from scribe.workspace.watcher.watcher import MAX_CHANGES, WorkspaceWatcher

WAIT_S = 5.0


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def drain_until(watcher: WorkspaceWatcher, seen: Mapping[str, str], done: Callable[[list[FileChange]], bool],
                timeout: float = WAIT_S) -> list[FileChange]:
    """Drain repeatedly until `done(all so far)` holds; fails after `timeout` seconds."""
    got: list[FileChange] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got += watcher.drain(seen)
        if done(got):
            return got
        time.sleep(0.02)
    raise AssertionError(f"timed out; drained so far: {got}")


def has(path: str) -> Callable[[list[FileChange]], bool]:
    return lambda got: any(c.path == path for c in got)


@pytest.fixture
def watching(workspace: Path) -> Iterator[WorkspaceWatcher]:
    (workspace / ".gitignore").write_text("build/\n*.log\n")
    (workspace / "build").mkdir()
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    watcher = WorkspaceWatcher(workspace, exclude=[workspace / "state"], git=query_in(workspace))
    assert watcher.start() is None
    yield watcher
    watcher.stop()


# -- coalescing and classification, without threads: a fake clock, notes made by hand ------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def manual(tmp_path: Path) -> tuple[WorkspaceWatcher, Clock]:
    clock = Clock()
    watcher = WorkspaceWatcher(tmp_path, clock=clock)  # never started: the test plays watchdog
    from scribe.workspace.watcher.gitignore import GitIgnore

    watcher._ignore = GitIgnore(tmp_path, query_in(tmp_path))
    return watcher, clock


def test_a_burst_settles_into_one_change_per_path_after_the_quiet_time(manual: tuple[WorkspaceWatcher, Clock],
                                                                        tmp_path: Path) -> None:
    watcher, clock = manual
    (tmp_path / "a.txt").write_text("new\n")
    watcher.pending.note("created", "a.txt")
    watcher.pending.note("modified", "a.txt")
    assert watcher.drain({}) == []  # not quiet yet
    clock.now += 0.2
    [change] = watcher.drain({})
    assert (change.path, change.kind, change.hash, change.stale) == ("a.txt", "created", sha(b"new\n"), False)
    assert watcher.drain({}) == []


def test_an_editors_save_by_rename_is_one_modification_and_a_temp_file_is_nothing(
        manual: tuple[WorkspaceWatcher, Clock], tmp_path: Path) -> None:
    watcher, clock = manual
    (tmp_path / "notes.md").write_text("saved\n")
    seen = {"notes.md": sha(b"before\n")}
    # vim-like: write a temp file, rename it over the original; plus a swap file that comes and goes
    watcher.pending.note("created", "notes.md.tmp")
    watcher.pending.note("moved", "notes.md.tmp", "notes.md")
    watcher.pending.note("created", ".notes.md.swp")
    watcher.pending.note("deleted", ".notes.md.swp")
    clock.now += 0.2
    assert watcher.drain(seen) == [FileChange("notes.md", "modified", sha(b"saved\n"), stale=True)]


def test_scribes_own_write_is_nothing_when_its_temporary_file_settles_before_the_rename(
        manual: tuple[WorkspaceWatcher, Clock], tmp_path: Path) -> None:
    # On a busy machine the temporary file of an atomic write can settle in one drain and be
    # renamed over its target in the next: the rename is the write, never a move of its own.
    watcher, clock = manual
    temporary = ".draft.txt.f70002ee.scribe-tmp"
    (tmp_path / temporary).write_text("by the agent\n")
    watcher.pending.note("created", temporary)
    clock.now += 0.2
    watcher.drain({})
    (tmp_path / temporary).rename(tmp_path / "draft.txt")
    watcher.pending.note("moved", temporary, "draft.txt")
    clock.now += 0.2
    assert watcher.drain({"draft.txt": sha(b"by the agent\n")}) == []


def test_a_rename_is_one_moved_change_and_a_deletion_of_a_seen_file_is_stale(
        manual: tuple[WorkspaceWatcher, Clock], tmp_path: Path) -> None:
    watcher, clock = manual
    (tmp_path / "new_name.py").write_text("x = 1\n")
    watcher.pending.note("moved", "old_name.py", "new_name.py")
    watcher.pending.note("deleted", "gone.py")
    clock.now += 0.2
    changes = watcher.drain({"gone.py": "abc"})
    assert FileChange("gone.py", "deleted", None, stale=True) in changes
    assert FileChange("old_name.py", "moved", sha(b"x = 1\n"), dest="new_name.py") in changes
    assert len(changes) == 2


def test_a_folder_moved_away_whole_deletes_the_files_the_agent_had_seen_in_it(
        manual: tuple[WorkspaceWatcher, Clock]) -> None:
    watcher, clock = manual
    watcher.pending.note("dir_gone", "pkg")  # moved out of the workspace: no event per file
    clock.now += 0.2
    assert watcher.drain({"pkg/a.py": "h", "other.py": "h"}) == [FileChange("pkg/a.py", "deleted", stale=True)]


def test_the_agents_own_write_is_not_a_change(manual: tuple[WorkspaceWatcher, Clock], tmp_path: Path) -> None:
    watcher, clock = manual
    (tmp_path / "mine.py").write_text("by the agent\n")
    watcher.pending.note("created", "mine.py")
    clock.now += 0.2
    assert watcher.drain({"mine.py": sha(b"by the agent\n")}) == []


def test_what_a_command_changed_is_its_own_unless_the_agent_had_seen_the_file(
        manual: tuple[WorkspaceWatcher, Clock], tmp_path: Path) -> None:
    watcher, clock = manual
    (tmp_path / "out.txt").write_text("built\n")
    (tmp_path / "read.py").write_text("formatted\n")
    with watcher.command_running():
        watcher.pending.note("created", "out.txt", during_command=watcher._during_command())
        watcher.pending.note("modified", "read.py", during_command=watcher._during_command())
    clock.now += 0.1  # still within the grace after the command
    watcher.pending.note("modified", "read.py", during_command=watcher._during_command())
    clock.now += 1.0
    assert watcher.drain({"read.py": sha(b"before\n")}) == [
        FileChange("read.py", "modified", sha(b"formatted\n"), stale=True, during_command=True)]


def test_a_flood_lists_the_first_changes_and_counts_the_rest(manual: tuple[WorkspaceWatcher, Clock],
                                                            tmp_path: Path) -> None:
    watcher, clock = manual
    (tmp_path / "gen").mkdir()
    for i in range(MAX_CHANGES + 25):
        (tmp_path / "gen" / f"f{i:03}.txt").write_text(str(i))
        watcher.pending.note("created", f"gen/f{i:03}.txt")
    clock.now += 0.2
    changes = watcher.drain({})
    assert len(changes) == MAX_CHANGES + 1
    assert changes[-1] == FileChange("gen", "many", count=25)
    assert file_change_text(FileChangeEvent(seq=1, ts="t", **changes[-1].fields())).startswith(
        "[outside scribe: 25 more files changed under gen")


# -- the real watcher ----------------------------------------------------------------------------


def test_an_outside_edit_is_seen_once_and_stale_when_the_agent_had_read_it(watching: WorkspaceWatcher,
                                                                            workspace: Path) -> None:
    seen = {"src/app.py": sha(b"print('hi')\n")}
    (workspace / "src" / "app.py").write_text("print('changed')\n")
    got = drain_until(watching, seen, has("src/app.py"))
    assert got == [FileChange("src/app.py", "modified", sha(b"print('changed')\n"), stale=True)]
    (workspace / "sentinel.txt").write_text("s")
    got = drain_until(watching, seen, has("sentinel.txt"))
    assert [c.path for c in got] == ["sentinel.txt"]  # and app.py was not reported again


def test_ignored_paths_and_the_agents_own_writes_are_never_reported(watching: WorkspaceWatcher,
                                                                    workspace: Path) -> None:
    assert "build" not in watching._watches and "src" in watching._watches  # an ignored folder costs nothing
    seen: dict[str, str] = {}
    (workspace / "build" / "out.o").write_text("obj")
    (workspace / "debug.log").write_text("log")
    (workspace / "state").mkdir()
    (workspace / "state" / "session.jsonl").write_text("{}")
    (workspace / ".scribe").mkdir()
    (workspace / ".scribe" / "x").write_text("x")
    git(workspace, "add", ".gitignore")  # writes inside .git/
    data = b"written by write_file\n"
    (workspace / "src" / "mine.py").write_bytes(data)
    seen["src/mine.py"] = sha(data)  # what write_file records
    (workspace / "sentinel.txt").write_text("s")
    got = drain_until(watching, seen, has("sentinel.txt"))
    assert [c.path for c in got] == ["sentinel.txt"]


def test_a_new_top_level_folder_is_watched_and_its_first_files_are_not_missed(watching: WorkspaceWatcher,
                                                                              workspace: Path) -> None:
    (workspace / "docs" / "guide").mkdir(parents=True)
    (workspace / "docs" / "guide" / "intro.md").write_text("# intro\n")
    got = drain_until(watching, {}, has("docs/guide/intro.md"))
    assert [(c.path, c.kind) for c in got] == [("docs/guide/intro.md", "created")]
    (workspace / "docs" / "guide" / "intro.md").write_text("# intro, edited\n")
    got = drain_until(watching, {}, lambda got: bool(got))
    assert [(c.path, c.kind) for c in got] == [("docs/guide/intro.md", "modified")]


def test_a_real_rename_and_an_atomic_save(watching: WorkspaceWatcher, workspace: Path) -> None:
    seen = {"src/app.py": sha(b"print('hi')\n")}
    os.rename(workspace / "src" / "app.py", workspace / "src" / "main.py")
    got = drain_until(watching, seen, has("src/app.py"))
    assert got == [FileChange("src/app.py", "moved", sha(b"print('hi')\n"), stale=True, dest="src/main.py")]
    seen = {"src/main.py": sha(b"print('hi')\n")}
    temp = workspace / "src" / ".main.py.~tmp"
    temp.write_text("print('saved')\n")
    os.replace(temp, workspace / "src" / "main.py")
    got = drain_until(watching, seen, has("src/main.py"))
    assert got == [FileChange("src/main.py", "modified", sha(b"print('saved')\n"), stale=True)]


def test_a_workspace_that_is_not_a_repository_is_watched_too(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    watcher = WorkspaceWatcher(tmp_path / "plain", git=query_in(tmp_path / "plain"))
    assert watcher.start() is None
    try:
        (tmp_path / "plain" / "a.txt").write_text("a")
        got = drain_until(watcher, {}, has("a.txt"))
        assert [(c.path, c.kind) for c in got] == [("a.txt", "created")]
    finally:
        watcher.stop()


# -- the loop drains at safe points only ----------------------------------------------------------


class RecordingSource:
    """A ChangeSource that reports one outside change at its second drain and records, at each
    drain, the type of the last event in the log and whether a command was running."""

    def __init__(self, session_events: list) -> None:  # type: ignore[type-arg]
        self.events = session_events
        self.drains: list[str] = []
        self.in_command = False
        self.commands = 0
        self.started = self.stopped = 0

    def start(self) -> str | None:
        self.started += 1
        return None

    def drain(self, seen: Mapping[str, str]) -> list[FileChange]:
        assert not self.in_command
        self.drains.append(self.events[-1].type)
        if len(self.drains) == 2:
            return [FileChange("notes.txt", "modified", "h", stale="notes.txt" in seen)]
        return []

    def take_failure(self) -> str | None:
        # one handler error, met before the first drain: reported once, then never again
        return "OSError: inotify read failed" if len(self.drains) == 1 else None

    @contextmanager
    def command_running(self) -> Iterator[None]:
        self.in_command = True
        self.commands += 1
        try:
            yield
        finally:
            self.in_command = False

    def stop(self) -> None:
        self.stopped += 1


def test_the_loop_drains_after_the_user_event_and_after_each_batch_of_results(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "notes.txt").write_text("one\n")
    script = [
        Reply([tool_use_block("read_file", {"path": "notes.txt"}),
               tool_use_block("run_command", {"command": "true"})]),
        Reply([text_block("Done.")]),
    ]
    with FakeMessagesServer(script) as server:
        agent = agent_on(server, workspace, Settings(permission_mode="full-auto", max_retries=0), monkeypatch)
        session = agent.session
        source = RecordingSource(session.events)
        agent.watcher = source
        out = list(agent.turn("read it"))
        session.close()
    assert source.drains == ["user", "tool_result"] and source.commands == 1 and source.started == 1
    assert isinstance(out[-1], TurnEnded) and out[-1].reason == "end_turn"
    assert Notice("[outside scribe: notes.txt was modified; it changed since you last read it]") in out
    failures = [n for n in out if isinstance(n, Notice) and n.text.startswith("watcher:")]
    assert failures == [Notice("watcher: OSError: inotify read failed; some outside changes may go unreported")]
    assert [e.message for e in session.events if e.type == "error"] == [
        "watching the workspace: OSError: inotify read failed"]
    kinds = [e.type for e in session.events]
    change = kinds.index("file_change")
    assert kinds[change - 2:change + 2] == ["tool_result", "tool_result", "file_change", "assistant"]
    # rendered after the tool results, in the same user message, as the API requires
    last_user = render(session.events[:change + 1]).messages[-1]
    assert [b["type"] for b in last_user["content"]] == ["tool_result", "tool_result", "text"]
    assert server.requests[1].json["messages"][-1]["content"][-1]["text"].startswith("[outside scribe: notes.txt")
    agent.close()
    assert source.stopped == 1


def test_no_file_change_events_from_the_agents_own_writes_through_the_whole_loop(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real watcher, the real tools: writes and edits, then a pause long enough for any event
    to settle, then a second turn whose drain would report it."""
    script = [
        Reply([tool_use_block("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"})]),
        Reply([tool_use_block("edit_file", {"path": "calc.py", "old_text": "a + b", "new_text": "b + a"})]),
        Reply([text_block("Wrote calc.py.")]),
        Reply([text_block("Nothing new.")]),
    ]
    with FakeMessagesServer(script) as server:
        agent = agent_on(server, workspace, Settings(permission_mode="full-auto", max_retries=0), monkeypatch)
        session = agent.session
        list(agent.turn("write calc.py"))
        assert agent.watcher is not None
        # the sentinel is written by "the person": once it is reported, calc.py's events have settled too
        (workspace / "sentinel.txt").write_text("s")
        watcher = agent.watcher
        assert isinstance(watcher, WorkspaceWatcher)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and not ("sentinel.txt" in watcher.pending._paths and _settled(watcher)):
            time.sleep(0.02)
        list(agent.turn("anything new?"))
        agent.close()
        session.close()
    changes = [e for e in session.events if isinstance(e, FileChangeEvent)]
    assert [(c.path, c.kind) for c in changes] == [("sentinel.txt", "created")]
    assert not [e for e in session.events if isinstance(e, ToolResultEvent) and e.is_error]
    second_turn = [type(e) for e in session.events if e.seq > changes[0].seq - 2]
    assert second_turn[:3] == [UserEvent, FileChangeEvent, AssistantEvent]


def _settled(watcher: WorkspaceWatcher) -> bool:
    """True once every pending path has been quiet for the debounce time."""
    cutoff = watcher.clock() - watcher.debounce_s
    return all(p.last <= cutoff for p in watcher.pending._paths.values())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_past_the_inotify_watch_limit_watching_is_off_with_one_clear_line(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from watchdog.observers import inotify_c

    def limit(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    (tmp_path / "src").mkdir()
    monkeypatch.setattr(inotify_c.InotifyFD, "add_callback", limit)
    before = set(threading.enumerate())
    watcher = WorkspaceWatcher(tmp_path, git=query_in(tmp_path))
    problem = watcher.start()
    assert problem == ("file watcher off (too many folders for the inotify watch limit, "
                       "fs.inotify.max_user_watches); outside changes will not be noticed")
    assert watcher.start() == problem and watcher.drain({}) == [] and not watcher.watching
    deadline = time.monotonic() + WAIT_S
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not set(threading.enumerate()) - before  # no emitter thread left behind


def test_a_handler_error_is_kept_for_the_loop_not_lost(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    watcher = WorkspaceWatcher(workspace, git=query_in(workspace))
    assert watcher.start() is None
    try:
        def broken(event: object) -> None:
            raise OSError("disk went away")

        monkeypatch.setattr(watcher, "on_event", broken)
        (workspace / "poke.txt").write_text("x\n")
        deadline = time.monotonic() + 5
        failure = None
        while failure is None and time.monotonic() < deadline:
            time.sleep(0.02)
            failure = watcher.take_failure()
        assert failure == "OSError: disk went away"
        assert watcher.take_failure() is None  # reported once
    finally:
        watcher.stop()
