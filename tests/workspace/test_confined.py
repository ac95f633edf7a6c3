"""The confined writer: below its root, through no link, in one step; refused in one line when
a path would leave. Each case runs twice: with openat2 (the kernel's RESOLVE_BENEATH and
RESOLVE_NO_SYMLINKS) and with the component-by-component walk used where the kernel lacks it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import scribe.workspace.writers.confined as confined
from scribe.workspace.writers.atomic import WriteRefused
from scribe.workspace.writers.confined import ConfinedRoot, Outside


@pytest.fixture(params=["openat2", "walk"])
def root(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ConfinedRoot]:
    if request.param == "walk":
        monkeypatch.setattr(confined, "_openat2_works", False)
    (tmp_path / "ws" / "d").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("the person's\n")
    yield ConfinedRoot(tmp_path / "ws")


def test_writes_reads_and_removes_below_the_root(root: ConfinedRoot) -> None:
    root.write("d/a.txt", b"one\n")
    root.write("new/deeper/b.txt", b"two\n", make_parents=True)
    assert root.read("d/a.txt") == b"one\n" and (root.root / "new" / "deeper" / "b.txt").read_text() == "two\n"
    assert root.read(root.root / "d" / "a.txt") == b"one\n"  # an absolute path inside is the same file
    os.chmod(root.root / "d" / "a.txt", 0o751)
    root.write("d/a.txt", b"three\n")
    assert (root.root / "d" / "a.txt").stat().st_mode & 0o777 == 0o751  # the old file's mode is kept
    root.remove("new/deeper/b.txt", prune=True)
    assert not (root.root / "new").exists() and (root.root / "d").is_dir()
    assert sorted(os.listdir(root.root / "d")) == ["a.txt"]  # no temporary file left behind


@pytest.mark.parametrize("path, why", [
    ("link/secret", "link is a link (to {outside}); scribe never follows a link here"),
    ("d/inner/x", "d/inner is a link"),
    ("../outside/secret", "climbs out with '..'"),
    ("{outside}/secret", "is outside"),
    ("file/x", "file is not a folder"),
])
def test_what_would_leave_is_refused_in_one_line(root: ConfinedRoot, path: str, why: str) -> None:
    outside = root.root.parent / "outside"
    (root.root / "link").symlink_to(outside)
    (root.root / "d" / "inner").symlink_to(outside)
    (root.root / "file").write_text("a file\n")
    target = path.format(outside=outside)
    for attempt in (lambda: root.write(target, b"x"), lambda: root.read(target), lambda: root.remove(target),
                    lambda: root.write(target, b"x", make_parents=True)):
        with pytest.raises(Outside) as refused:
            attempt()
        assert why.format(outside=outside) in str(refused.value) and "\n" not in str(refused.value)
    assert (outside / "secret").read_text() == "the person's\n" and os.listdir(outside) == ["secret"]


def test_a_link_as_the_file_itself_is_not_followed(root: ConfinedRoot) -> None:
    outside = root.root.parent / "outside" / "secret"
    (root.root / "d" / "points-out").symlink_to(outside)
    with pytest.raises(Outside, match="is a link"):
        root.write("d/points-out", b"x")
    with pytest.raises(Outside, match="is a link"):
        root.read("d/points-out")
    root.remove("d/points-out")  # removing the entry never touches what it pointed at
    assert outside.read_text() == "the person's\n" and not os.path.lexists(root.root / "d" / "points-out")


def test_a_fifo_is_refused_before_it_is_opened(root: ConfinedRoot) -> None:
    os.mkfifo(root.root / "d" / "pipe")
    with pytest.raises(WriteRefused, match="a named pipe"):
        root.write("d/pipe", b"x")
    with pytest.raises(WriteRefused, match="a named pipe"):
        root.read("d/pipe")


def test_a_prepared_write_changes_nothing_until_committed(root: ConfinedRoot) -> None:
    root.write("d/a.txt", b"before\n")
    pending = root.prepare("d/a.txt", b"after\n")
    assert root.read("d/a.txt") == b"before\n"
    pending.discard()
    assert root.read("d/a.txt") == b"before\n" and os.listdir(root.root / "d") == ["a.txt"]
    root.prepare("d/a.txt", b"after\n").commit()
    assert root.read("d/a.txt") == b"after\n"
