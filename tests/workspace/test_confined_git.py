"""The seam every git process scribe starts goes through (workspace/git/confined.py): GitPython's
`Git` with `execute` confined. Each call runs git, and only git, in a sandbox of its own with
the environment scribe gives it; what it started (GitPython's persistent readers too) ends with
the call or at its timeout; and GitPython, left to itself, starts nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git
from helpers import running, wait_for
from scribe.workspace.git.confined import (
    UNRUNNABLE,
    ConfinedGit,
    confined,
    git_environment,
    git_executable,
    gitpython,
)
from scribe.workspace.git.run import neutral_env, objects
from scribe.workspace.sandbox.bwrap import Plain, ReadOnly, find_bwrap, probe

BWRAP = find_bwrap()
needs_bwrap = pytest.mark.skipif(BWRAP is None or probe(BWRAP, os.geteuid() == 0).problem is not None,
                                 reason="bubblewrap cannot create namespaces here")


@pytest.fixture
def box() -> ReadOnly:
    assert BWRAP is not None
    return ReadOnly(BWRAP, os.geteuid() == 0)


def _git_call(git_: ConfinedGit, *args: str) -> tuple[int, str, str]:
    status, out, err = git_.execute([git_.GIT_PYTHON_GIT_EXECUTABLE, *args], with_extended_output=True,
                                    with_exceptions=False)
    return status, out, err


@needs_bwrap
def test_each_call_gets_its_own_environment_and_folder(box: ReadOnly, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    env = {"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    with confined(workspace, box, {**env, "GIT_AUTHOR_NAME": "One"}) as first:
        assert _git_call(first, "var", "GIT_AUTHOR_IDENT")[1].startswith("One <")
        assert _git_call(first, "rev-parse", "--show-prefix") == (0, "", "")
    with confined(workspace / "sub", box, {**env, "GIT_AUTHOR_NAME": "Two"}) as second:
        assert _git_call(second, "var", "GIT_AUTHOR_IDENT")[1].startswith("Two <")
        assert _git_call(second, "rev-parse", "--show-prefix")[1] == "sub/"
        ran = second.batch([["version"], ["rev-parse", "--verify", "-q", "no-such-ref"], ["version"]], stop=True)
    assert [r.status for r in ran] == [0, 1] and ran[0].out.startswith(b"git version")


@needs_bwrap
def test_every_process_is_the_git_found_here_run_in_the_sandbox(box: ReadOnly, workspace: Path) -> None:
    with confined(workspace, box, neutral_env(workspace)) as confined_git:
        confined_git.get_object_header("HEAD")  # GitPython's persistent `cat-file --batch-check`
        [reader] = confined_git._started
        argv = reader.args
        assert isinstance(argv, list) and Path(argv[0]).name == "bwrap"
        assert argv[argv.index("--") + 1:] == [git_executable(workspace), "cat-file", "--batch-check"]


def test_it_runs_git_and_nothing_else(workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with confined(workspace, Plain(), neutral_env(workspace)) as confined_git:
        for command in (["sh", "-c", f"touch {marker}"], f"touch {marker}",
                        [os.fspath(git_executable(workspace)), "version"]):
            with pytest.raises(ValueError, match="runs git and nothing else"):
                confined_git.execute(command)
    assert not marker.exists()


def test_gitpython_left_to_itself_starts_no_git(workspace: Path, tmp_path: Path) -> None:
    """Its own Git (a Repo.init, a Commit's trailers, its version check) names UNRUNNABLE."""
    assert gitpython.Git.GIT_PYTHON_GIT_EXECUTABLE == UNRUNNABLE
    with pytest.raises(PermissionError):
        gitpython.Git(str(workspace)).version()
    with pytest.raises(PermissionError):
        gitpython.Repo.init(tmp_path / "new")
    assert not (tmp_path / "new" / ".git").exists()


@needs_bwrap
def test_nothing_a_call_started_outlives_it(box: ReadOnly, workspace: Path) -> None:
    git(workspace, "commit", "--quiet", "--allow-empty", "-m", "second")
    head = git(workspace, "rev-parse", "HEAD").strip()
    with objects(workspace, workspace / ".git", box) as history:
        commit = history.commit(head)
        assert commit.message.strip() == "second" and commit.parents[0].message.strip() == "initial commit"
        assert (commit.tree / "README.md").data_stream.read() == b"# test workspace\n"
        readers = [p for p in history.git._started if p.poll() is None]
        assert len(readers) == 2  # GitPython's --batch-check and --batch, kept open while reading
    assert all(p.poll() is not None for p in readers)
    # ended and reaped; bwrap's own child in the sandbox (the same command line) follows it at once
    assert wait_for(lambda: not any(running(*p.args) for p in readers), 5)


@needs_bwrap
def test_a_reader_past_its_timeout_is_ended(box: ReadOnly, workspace: Path) -> None:
    with confined(workspace, box, neutral_env(workspace), timeout=1) as confined_git:
        reader = confined_git.execute([confined_git.GIT_PYTHON_GIT_EXECUTABLE, "cat-file", "--batch"],
                                      istream=subprocess.PIPE, as_process=True)
        assert wait_for(lambda: reader.proc.poll() is not None)  # its stdin still open: the timer ended it


@needs_bwrap
def test_a_call_past_its_timeout_ends_its_sandbox(box: ReadOnly, workspace: Path) -> None:
    """A FIFO in the workspace: git blocks opening it, and the call ends instead of waiting."""
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    with confined(workspace, box, neutral_env(workspace), timeout=1) as confined_git:
        with pytest.raises(subprocess.TimeoutExpired):
            confined_git.execute([confined_git.GIT_PYTHON_GIT_EXECUTABLE, "hash-object", str(fifo)])
        [started] = confined_git._started
        assert started.poll() is not None
        assert _git_call(confined_git, "version")[0] == 0  # the next call starts another


def test_git_gets_no_secret_and_no_foreign_git_variable() -> None:
    given = {"PATH": "/usr/bin", "HOME": "/home/p", "ANTHROPIC_API_KEY": "sk-ant-x", "DB_URL": "postgres://a:pw@db",
             "GIT_DIR": "/elsewhere/.git", "GIT_WORK_TREE": "/elsewhere", "GIT_INDEX_FILE": "/tmp/i",
             "GIT_EXEC_PATH": "/evil", "GIT_EXTERNAL_DIFF": "/evil/diff", "GIT_PAGER": "/evil/pager",
             "GIT_SSH_COMMAND": "/evil/ssh", "GIT_CONFIG_PARAMETERS": "'core.hookspath'='/evil'",
             "GIT_TRACE": "/tmp/trace", "GIT_PYTHON_GIT_EXECUTABLE": "/evil/git", "BASH_ENV": "/evil/rc",
             "BASH_FUNC_printf%%": "() { :; }", "GIT_CONFIG_GLOBAL": "/home/p/.gitconfig", "GIT_CONFIG_COUNT": "1",
             "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "P", "GIT_AUTHOR_NAME": "P"}
    assert git_environment(given) == {
        "PATH": "/usr/bin", "HOME": "/home/p", "GIT_CONFIG_GLOBAL": "/home/p/.gitconfig", "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "P", "GIT_AUTHOR_NAME": "P"}


def test_git_is_never_one_the_workspace_put_on_path(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = git_executable(Path("/"))
    for folder in ("bin", "tools"):
        planted = workspace / folder / "git"
        planted.parent.mkdir()
        planted.write_text("#!/bin/sh\nexit 1\n")
        planted.chmod(0o755)
    (workspace / "git").write_text("#!/bin/sh\nexit 1\n")
    (workspace / "git").chmod(0o755)
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("PATH", os.pathsep.join(["", "bin", str(workspace / "tools"), os.environ["PATH"]]))
    assert git_executable(workspace) == real
