"""Shared fixtures: a real git workspace, so tools and agent code meet the same repository
shapes they will meet in use."""

from __future__ import annotations

import compileall
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def git(workspace: Path, *args: str) -> str:
    """Run git in `workspace` ignoring the user's global and system config (signing, hooks,
    default branch), so the fixture behaves the same on every machine."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    result = subprocess.run(
        ["git", *args], cwd=workspace, env=env, capture_output=True, text=True, check=True
    )
    return result.stdout


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile scribe's own modules once, before any test starts the executable: where
    PYTHONDONTWRITEBYTECODE is set (CI sets it), every `scribe` process the tests start would
    otherwise compile them all again (0.1 to 0.2 s of CPU each, for hundreds of processes)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # the controller compiles; the workers read what it wrote
    package = Path(__file__).resolve().parents[1]
    for folder in sorted(package.iterdir()):
        if (folder / "__init__.py").is_file() and folder.name not in ("tests", "benchmarks"):
            compileall.compile_dir(folder, quiet=1)
    for module in ("__init__.py", "__main__.py"):
        compileall.compile_file(package / module, quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `first` go first: the longest files (a real model's chain and its REPL
    session, the crash test's kills), each on a worker of its own from the start, so they overlap
    the rest of the suite instead of trailing it."""
    items.sort(key=lambda item: item.get_closest_marker("first") is None)


@pytest.fixture(scope="session", autouse=True)
def log_key_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The person's state folder, where scribe keeps the key that seals its logs (log/seal.py):
    one for the whole run, never the real one of whoever runs the tests. Every scribe a test
    starts inherits it (helpers.scribe_env copies this environment)."""
    folder = tmp_path_factory.mktemp("state")
    saved = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = saved


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A temporary git repository with local identity and one commit holding README.md."""
    return make_repository(tmp_path / "workspace")


def make_repository(root: Path) -> Path:
    """The `workspace` fixture's repository, at `root` (for fixtures of a wider scope)."""
    root.mkdir(parents=True)
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "config", "user.name", "Scribe Test")
    git(root, "config", "user.email", "scribe-test@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    (root / "README.md").write_text("# test workspace\n")
    git(root, "add", "README.md")
    git(root, "commit", "--quiet", "-m", "initial commit")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty home folder for the person running scribe (no config of theirs leaks in)."""
    path = tmp_path / "home"
    path.mkdir()
    return path


# Marks a sessions folder whose logs a test damages on purpose; the check below skips it.
CORRUPT_ON_PURPOSE = ".corrupt-on-purpose"


@pytest.fixture(scope="session", autouse=True)
def every_log_verifies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After the whole run: every session log any test produced passes `scribe log verify`'s
    checks (warnings allowed: a torn last line, calls open at the end)."""
    yield
    from scribe.log.verify import verify_bytes

    failures = []
    for path in tmp_path_factory.getbasetemp().rglob(".scribe/sessions/*.jsonl"):
        if (path.parent / CORRUPT_ON_PURPOSE).exists():
            continue
        result = verify_bytes(path.read_bytes())
        if not result.ok:
            failures.append((str(path), [str(f) for f in result.findings]))
    assert not failures, failures
