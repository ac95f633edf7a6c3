"""The log on disk: append-only lines, one writer, a reader that survives a torn tail."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scribe.log.events import ErrorEvent, UserEvent
from scribe.log.jsonl import LogWriter, SessionLocked, read_log
from scribe.log.store import SessionNotFound, SessionStore, exclude_from_git


def test_append_assigns_rising_seq_and_flushes_each_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogWriter.create(path) as writer:
        writer.append(UserEvent, text="one")
        # visible to another reader before sync or close: each line is flushed
        assert json.loads(path.read_text().splitlines()[0])["text"] == "one"
        writer.append(UserEvent, text="two", colour="blue")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["seq"] for r in lines] == [0, 1]
    assert lines[1] == {"v": 1, "seq": 1, "ts": lines[1]["ts"], "type": "user", "text": "two", "colour": "blue"}


def test_torn_last_line_is_reported_and_cut_on_resume_keeping_the_fragment(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogWriter.create(path) as writer:
        writer.append(UserEvent, text="kept")
    with path.open("ab") as fh:
        fh.write(b'{"v":1,"seq":1,"ts":"x","type":"us')
    read = read_log(path)
    assert [e.seq for e in read.events] == [0]
    assert read.torn_tail and "torn" in read.problems[0].message and read.problems[0].line == 2
    with LogWriter.resume(path, read) as writer:
        assert writer.next_seq == 1
        writer.append(ErrorEvent, kind="internal", message="recovered")
    again = read_log(path)
    assert not again.problems and [e.seq for e in again.events] == [0, 1]


def test_bad_lines_are_reported_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"v":1,"seq":0,"ts":"t","type":"user","text":"a"}\nnot json\n{"seq":"x"}\n'
                    '{"v":9,"seq":3,"ts":"t","type":"user","text":"b"}\n')
    read = read_log(path)
    assert len(read.events) == 1
    assert [(p.line, p.message.split(" ")[0]) for p in read.problems] == [(2, "not"), (3, "line"), (4, "log")]
    assert "newer" in read.problems[2].message


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogWriter.create(path):
        code = ("import sys; from pathlib import Path; from scribe.log.jsonl import LogWriter, SessionLocked\n"
                "try:\n    LogWriter(Path(sys.argv[1]), next_seq=0)\nexcept SessionLocked as e:\n"
                "    print(e); sys.exit(3)\n")
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
        assert proc.returncode == 3 and "being written by process" in proc.stdout
    with LogWriter(path, next_seq=1):  # free again once closed
        pass
    with LogWriter(path, next_seq=1), pytest.raises(SessionLocked):
        LogWriter(path, next_seq=1)


def test_store_finds_by_prefix_and_latest(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    for sid in ("20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260102-000000-bbcccc"):
        with LogWriter.create(store.path_for(sid)) as w:
            w.append(UserEvent, text=sid)
    assert store.latest().id == "20260102-000000-bbcccc"
    assert store.find("20260101").id == "20260101-000000-aaaaaa"
    with pytest.raises(SessionNotFound, match="matches 2 sessions"):
        store.find("20260102")
    with pytest.raises(SessionNotFound, match="no session matches"):
        store.find("1999")


def test_state_folder_is_excluded_through_info_exclude_once(workspace: Path) -> None:
    exclude_from_git(workspace, workspace / ".scribe")
    exclude_from_git(workspace, workspace / ".scribe")
    text = (workspace / ".git" / "info" / "exclude").read_text()
    assert text.count("/.scribe/") == 1
    (workspace / ".scribe").mkdir()
    (workspace / ".scribe" / "x").write_text("x")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=workspace, capture_output=True, text=True).stdout
    assert ".scribe" not in status
    assert not (workspace / ".gitignore").exists()


@pytest.mark.parametrize("layout", ["worktree", "bare"])
def test_a_session_in_a_linked_worktree_keeps_its_state_folder_out_of_git(tmp_path: Path, home: Path,
                                                                           layout: str) -> None:
    from helpers import run_scribe, scribe_env
    from scribe.fakeapi import FakeMessagesServer, Reply

    def git(cwd: Path, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout

    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    git(origin, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "one")
    if layout == "bare":  # `git clone --bare x .bare`, then a worktree beside it: a common habit
        project = tmp_path / "project"
        project.mkdir()
        git(project, "clone", "-q", "--bare", str(origin), ".bare")
        git(project / ".bare", "worktree", "add", "-q", str(project / "main"), "main")
        tree = project / "main"
    else:
        git(origin, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "feature"))
        tree = tmp_path / "feature"
    assert (tree / ".git").is_file()
    with FakeMessagesServer([Reply.text("hi")]) as server:
        ran = run_scribe(["run", "hello"], tree, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert (tree / ".scribe").is_dir()
    assert ".scribe" not in git(tree, "status", "--porcelain", "--untracked-files=all")


def test_a_git_file_pointing_at_another_repository_gets_nothing_written_there(tmp_path: Path, home: Path) -> None:
    """A `.git` file a command (or a clone) planted, naming a repository that is not this work
    tree's: git works there, but scribe does not add its line to that repository's exclude."""
    from helpers import run_scribe, scribe_env
    from scribe.fakeapi import FakeMessagesServer, Reply

    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=other, check=True)
    exclude = other / ".git" / "info" / "exclude"
    before = exclude.read_text()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with FakeMessagesServer([Reply.text("hi")]) as server:
        ran = run_scribe(["run", "hello"], tree, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert exclude.read_text() == before


def test_latest_follows_creation_time_within_one_second(tmp_path: Path) -> None:
    """Ids carry seconds and a random part: the later of two sessions started within one second
    can have the smaller id; the recorded creation time decides."""
    store = SessionStore(tmp_path)
    for sid, created in (("20260101-000000-ffffff", "2026-01-01T00:00:00.100Z"),
                         ("20260101-000000-000000", "2026-01-01T00:00:00.900Z")):
        with LogWriter.create(store.path_for(sid)) as w:
            w.append(UserEvent, text="x", created=created)
    assert store.latest().id == "20260101-000000-000000"
