"""scribe's own git calls run no program the repository names, whatever its `.git/config`, hooks
and attributes say: fsmonitor, hooks (in .git/hooks or any core.hooksPath), filters, textconv,
external diff, editors and the like. Each hostile entry is a real program that would leave a
line in a marker file; every test drives the real `scribe` executable and real git."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import git
from helpers import SCRIBE, events_of, run_scribe, scribe_env, session_logs
from hostile import HOOKS, plant
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import GitCommitEvent
from scribe.workspace.git.repository import GitRefused, commit_paths
from scribe.workspace.git.run import neutral_env

ROOT = Path(__file__).resolve().parents[2]




def make_hostile(workspace: Path, evil: Path, marker: Path, *, hooks_path: bool) -> None:
    """Every kind of program a repository's config can name, planted in `workspace`'s .git."""
    for name in HOOKS:
        plant(workspace / ".git" / "hooks" / name, marker, f"hook {name}")
    config = {
        "core.fsmonitor": plant(evil / "fsmonitor", marker, "fsmonitor"),
        "filter.x.clean": f"{plant(evil / 'clean', marker, 'clean', True)} %f",
        "filter.x.smudge": f"{plant(evil / 'smudge', marker, 'smudge', True)} %f",
        "filter.p.process": plant(evil / "process", marker, "process"),
        "diff.t.textconv": plant(evil / "textconv", marker, "textconv", True),
        "diff.t.command": plant(evil / "diffcmd", marker, "diff.command"),
        "diff.external": plant(evil / "external", marker, "diff.external"),
        "core.pager": plant(evil / "pager", marker, "pager", True),
        "core.editor": plant(evil / "editor", marker, "editor"),
        "core.sshCommand": plant(evil / "ssh", marker, "ssh"),
        "core.askPass": plant(evil / "askpass", marker, "askpass"),
        "credential.helper": plant(evil / "credential", marker, "credential"),
        "gpg.program": plant(evil / "gpg", marker, "gpg"),
        "core.alternateRefsCommand": plant(evil / "altrefs", marker, "alternateRefsCommand"),
        "merge.m.driver": plant(evil / "merge", marker, "merge.driver"),
        "include.path": str(evil / "included.config"),
    }
    if hooks_path:
        for name in HOOKS:
            plant(evil / "hooks" / name, marker, f"hooksPath {name}")
        config["core.hooksPath"] = str(evil / "hooks")
    for key, value in config.items():
        git(workspace, "config", key, str(value))
    # A driver defined only in an included file, with a `=` in its name.
    (evil / "included.config").write_text(
        f'[filter "a=b"]\n\tclean = {plant(evil / "inc-clean", marker, "included clean", True)}\n')
    (workspace / ".gitattributes").write_text("*.txt filter=x diff=t merge=m\n*.md filter=a=b diff=t\n"
                                              "*.dat filter=p\n")
    (workspace / "notes.txt").write_text("first line\n")
    git(workspace, "add", ".gitattributes", "notes.txt")
    marker.unlink(missing_ok=True)  # the fixture's own git calls ran them
    git(workspace, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "filter.x.clean=",
        "-c", "filter.a=b.clean=", "commit", "-q", "-m", "attributes")


def ran(marker: Path) -> list[str]:
    return marker.read_text().splitlines() if marker.exists() else []


@pytest.mark.parametrize("hooks_path", [False, True], ids=["dot-git-hooks", "core-hooksPath"])
def test_no_repository_program_runs_for_any_git_call_scribe_makes(
        workspace: Path, home: Path, tmp_path: Path, hooks_path: bool) -> None:
    marker = tmp_path / "marker"
    make_hostile(workspace, tmp_path / "evil", marker, hooks_path=hooks_path)
    # Proof that the planted programs are live: plain git runs them.
    (workspace / "notes.txt").write_text("first line\nchanged by the person\n")
    git(workspace, "diff", "--stat")
    assert ran(marker), "the hostile fixture plants nothing git would run"
    git(workspace, "checkout", "--", "notes.txt")
    marker.unlink()

    read_only = [Reply([tool_use_block("list_files", {}), tool_use_block("search_files", {"pattern": "line"})]),
                 Reply([text_block("looked")])]
    writes = [Reply([tool_use_block("write_file", {"path": "notes.txt", "content": "first line\nagent\n"}),
                     tool_use_block("write_file", {"path": "plan.md", "content": "# plan\n"}),
                     tool_use_block("write_file", {"path": "blob.dat", "content": "data\n"})]),
              Reply([text_block("wrote")])]
    with FakeMessagesServer([*read_only, *writes]) as server:
        env = scribe_env(server.base_url, home, SCRIBE_SANDBOX="0")
        looked = run_scribe(["run", "-p", "read-only", "look around"], workspace, env)
        assert looked.code == 0, looked.err
        assert ran(marker) == [], "read-only mode ran a repository program"
        base = git(workspace, "rev-parse", "HEAD").strip()
        wrote = run_scribe(["run", "-p", "full-auto", "--auto-commit", "write notes"], workspace, env)
        assert wrote.code == 0, wrote.err
        head = git(workspace, "rev-parse", "HEAD").strip()
        assert head != base and "committed" in wrote.err, wrote.err
        diff = run_scribe(["diff"], workspace, env)
        assert diff.code == 0 and "+agent" in diff.out, diff.err
        undo = run_scribe(["undo"], workspace, env)
        assert undo.code == 0 and "undid" in undo.err, undo.err
    assert git(workspace, "rev-parse", "HEAD").strip() == base
    assert ran(marker) == []


def test_the_persons_own_identity_and_programs_stay(workspace: Path, tmp_path: Path) -> None:
    """What the person's own (global) config names is theirs: kept, where the repository's is not."""

    person = tmp_path / "person.gitconfig"
    person.write_text("[user]\n\tname = The Person\n[credential]\n\thelper = person-helper\n")
    git(workspace, "config", "credential.helper", "repo-helper")
    env = neutral_env(workspace, {"GIT_CONFIG_GLOBAL": str(person), "GIT_CONFIG_NOSYSTEM": "1",
                                  "PATH": "/usr/bin:/bin"})
    def value(*args: str) -> str:
        return subprocess.run(["git", "config", *args], cwd=workspace, env=env, capture_output=True,
                              text=True).stdout.strip()

    # git reads the list in order and "" empties it: the repository's helper is gone, the person's stays
    assert value("--get-all", "credential.helper").splitlines()[-3:] == ["repo-helper", "", "person-helper"]
    assert value("user.name") == "Scribe Test"  # the repository's identity, as git would use it
    assert value("core.hooksPath") == "/dev/null" and value("core.fsmonitor") == "false"


def test_the_persons_command_line_config_in_the_environment_stays(workspace: Path, home: Path) -> None:
    """GIT_CONFIG_COUNT with its KEY_n/VALUE_n pairs is the person's (`git -c`'s environment
    form): scribe's git keeps it whole, a KEY_n name being no secret, and its own entries follow."""
    env = scribe_env("http://127.0.0.1:9", home, GIT_CONFIG_COUNT="2", GIT_CONFIG_KEY_0="user.name",
                     GIT_CONFIG_VALUE_0="From The Environment", GIT_CONFIG_KEY_1="url.x.insteadOf",
                     GIT_CONFIG_VALUE_1="https://me:hunter2@example.invalid/")
    with FakeMessagesServer(_write_run("a.txt")) as server:
        wrote = run_scribe(["run", "-p", "full-auto", "--auto-commit", "write a"], workspace,
                           {**env, "ANTHROPIC_BASE_URL": server.base_url})
    assert wrote.code == 0 and "committed" in wrote.err, wrote.err
    assert git(workspace, "log", "-1", "--format=%an").strip() == "From The Environment"


def test_a_required_filter_of_the_repositorys_fails_the_commit_rather_than_skip_it(workspace: Path,
                                                                                   tmp_path: Path) -> None:
    """git-crypt's way: a filter marked required. Its program does not run, and the file is not
    committed as it is on disk (in the clear) either: git refuses, and nothing moves."""
    marker = tmp_path / "marker"
    git(workspace, "config", "filter.crypt.clean", str(plant(tmp_path / "crypt", marker, "crypt", True)))
    git(workspace, "config", "filter.crypt.required", "true")
    (workspace / ".gitattributes").write_text("*.secret filter=crypt\n")
    (workspace / "key.secret").write_text("in the clear\n")
    base = git(workspace, "rev-parse", "HEAD").strip()
    with pytest.raises(GitRefused, match="clean filter 'crypt' failed"):
        commit_paths(workspace, ["key.secret"], "scribe: key\n")
    assert git(workspace, "rev-parse", "HEAD").strip() == base and not marker.exists()


def test_no_module_starts_git_but_the_runner() -> None:
    """A new git call site that bypasses workspace/git/run.py fails here: it would run the
    repository's programs, outside the sandbox, with scribe's secrets."""
    allowed = {ROOT / "workspace" / "git" / "run.py", ROOT / "workspace" / "git" / "confined.py"}
    starts_git = re.compile(r"""git\.Repo\(|\[\s*["']git["']|which\(\s*["']git["']\)|import git\b|from git\b""")
    offenders = []
    # scribe's own packages only: a virtual environment inside the checkout (CI makes .ci-venv)
    # holds gitpython itself
    packages = [folder for folder in sorted(ROOT.iterdir()) if (folder / "__init__.py").is_file()
                and folder.name not in ("tests", "benchmarks", "fakeapi")]
    assert {"agent", "cli", "tools", "workspace"} <= {folder.name for folder in packages}
    for path in (path for folder in packages for path in sorted(folder.rglob("*.py"))):
        if path in allowed:
            continue
        for line in path.read_text().splitlines():
            if starts_git.search(line) and not line.lstrip().startswith("#"):
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert offenders == [], offenders


# -- the seam attacked: what could make scribe's git start something else ------------------------


def _write_diff_undo(workspace: Path, env: dict[str, str], *, process: bool = False) -> None:
    """An auto-committed write, `scribe diff` and `scribe undo`: each must land in `workspace`'s
    own repository, through real git."""
    base = git(workspace, "rev-parse", "HEAD").strip()
    with FakeMessagesServer(_write_run("a.txt")) as server:
        env = {**env, "ANTHROPIC_BASE_URL": server.base_url}
        wrote = run_scribe(["run", "-p", "full-auto", "--auto-commit", "write a"], workspace, env, process=process)
        assert wrote.code == 0 and "committed" in wrote.err, wrote.err
        head = git(workspace, "rev-parse", "HEAD").strip()
        assert head != base and git(workspace, "show", "--format=", "--name-only", "HEAD").split() == ["a.txt"]
        diff = run_scribe(["diff"], workspace, env, process=process)
        assert diff.code == 0 and "+a.txt by the agent" in diff.out, diff.err
        undo = run_scribe(["undo"], workspace, env, process=process)
        assert undo.code == 0 and f"undid {head[:10]}" in undo.err, undo.err
    assert git(workspace, "rev-parse", "HEAD").strip() == base


@pytest.mark.parametrize("sandbox", ["1", "0"], ids=["sandboxed", "no-sandbox"])
def test_a_git_the_workspace_put_on_path_or_gitpython_is_told_of_never_runs(
        workspace: Path, home: Path, tmp_path: Path, sandbox: str) -> None:
    """A cloned repository ships `git` where PATH finds it from the workspace: in the workspace
    itself (an empty entry), in `bin` (a relative entry), in `tools` (the person put the
    workspace's tools on PATH); and GIT_PYTHON_GIT_EXECUTABLE names one too. Each would fail every
    git call and leave a marker. The real executable: GitPython's import-time check is the point."""
    marker = tmp_path / "marker"
    for folder in (".", "bin", "tools"):
        plant(workspace / folder / "git", marker, f"planted git in {folder}")
        (workspace / folder / "git").write_text((workspace / folder / "git").read_text().replace("exit 0", "exit 1"))
    git(workspace, "add", "git", "bin/git", "tools/git")
    git(workspace, "commit", "--quiet", "-m", "tools")
    told = plant(tmp_path / "evil" / "git", marker, "GIT_PYTHON_GIT_EXECUTABLE")
    path = os.pathsep.join(["", "bin", str(workspace / "tools"), os.environ["PATH"]])
    env = scribe_env("http://127.0.0.1:9", home, PATH=path, GIT_PYTHON_GIT_EXECUTABLE=str(told), SCRIBE_SANDBOX=sandbox)
    _write_diff_undo(workspace, env, process=True)
    assert ran(marker) == []


@pytest.mark.parametrize("sandbox", ["1", "0"], ids=["sandboxed", "no-sandbox"])
def test_git_variables_in_scribes_environment_change_nothing_it_runs(
        workspace: Path, home: Path, tmp_path: Path, sandbox: str) -> None:
    """scribe started with GIT_* variables (from inside a git hook, an alias's `git -c`, a
    dotfiles setup): another repository named by GIT_DIR, GIT_COMMON_DIR and
    GIT_OBJECT_DIRECTORY, hooks and an fsmonitor in GIT_CONFIG_PARAMETERS (which git reads after
    scribe's own command-line config), programs in GIT_EXTERNAL_DIFF, GIT_PAGER, GIT_EDITOR,
    GIT_SSH_COMMAND, GIT_ASKPASS and GitPython's GIT_PYTHON_GIT_EXECUTABLE, helpers in
    GIT_EXEC_PATH, and a start-up file for bash in BASH_ENV. scribe's git works on the
    workspace's repository and starts none of them."""
    from conftest import make_repository

    marker = tmp_path / "marker"
    evil = tmp_path / "evil"
    other = make_repository(tmp_path / "other")
    other_head = git(other, "rev-parse", "HEAD").strip()
    for name in HOOKS:
        plant(evil / "hooks" / name, marker, f"hook {name}")
    for name in ("git-status", "git-diff", "git-update-ref", "git-commit-tree"):
        plant(evil / "exec" / name, marker, f"GIT_EXEC_PATH {name}")
    programs = {name: str(plant(evil / name.lower(), marker, name, passthrough=True))
                for name in ("GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH_COMMAND", "GIT_ASKPASS",
                             "GIT_PYTHON_GIT_EXECUTABLE", "BASH_ENV")}
    fsmonitor = plant(evil / "fsmonitor", marker, "fsmonitor")
    env = scribe_env("http://127.0.0.1:9", home, SCRIBE_SANDBOX=sandbox, GIT_DIR=str(other / ".git"),
                     GIT_COMMON_DIR=str(other / ".git"), GIT_OBJECT_DIRECTORY=str(other / ".git" / "objects"),
                     GIT_CONFIG_PARAMETERS=f"'core.hookspath'='{evil / 'hooks'}' 'core.fsmonitor'='{fsmonitor}'",
                     GIT_EXEC_PATH=str(evil / "exec"), **programs)
    _write_diff_undo(workspace, env)
    assert ran(marker) == []
    assert git(other, "rev-parse", "HEAD").strip() == other_head and git(other, "status", "--porcelain") == ""


# -- auto-commit that tells the truth -----------------------------------------------------------


def _write_run(path: str) -> list[Reply]:
    return [Reply([tool_use_block("write_file", {"path": path, "content": f"{path} by the agent\n"})]),
            Reply([text_block("wrote it")])]


def _commits_logged(workspace: Path) -> list[str]:
    return [e.sha for log in session_logs(workspace) for e in events_of(log) if isinstance(e, GitCommitEvent)]


def test_a_stale_index_lock_commits_nothing_and_says_so(workspace: Path, home: Path) -> None:
    base = git(workspace, "rev-parse", "HEAD").strip()
    lock = workspace / ".git" / "index.lock"
    lock.write_text("")  # a git command that crashed left it
    with FakeMessagesServer(_write_run("a.txt")) as server:
        ran_ = run_scribe(["run", "-p", "full-auto", "--auto-commit", "write a"], workspace,
                          scribe_env(server.base_url, home))
    assert ran_.code == 1, ran_.err
    assert "auto-commit failed, nothing committed: git's index is locked" in ran_.err
    assert "index.lock exists" in ran_.err
    # HEAD and the log agree: neither moved
    assert git(workspace, "rev-parse", "HEAD").strip() == base and _commits_logged(workspace) == []
    assert (workspace / "a.txt").read_text() == "a.txt by the agent\n"  # the agent's work is still there


def test_undo_with_a_stale_index_lock_refuses_then_works_once_it_is_gone(workspace: Path, home: Path) -> None:
    base = git(workspace, "rev-parse", "HEAD").strip()
    with FakeMessagesServer(_write_run("a.txt")) as server:
        env = scribe_env(server.base_url, home)
        done = run_scribe(["run", "-p", "full-auto", "--auto-commit", "write a"], workspace, env)
        assert done.code == 0, done.err
        head = git(workspace, "rev-parse", "HEAD").strip()
        assert _commits_logged(workspace) == [head] and head != base
        lock = workspace / ".git" / "index.lock"
        lock.write_text("")
        refused = run_scribe(["undo"], workspace, env)
        assert refused.code == 1 and "git's index is locked" in refused.err and "nothing undone" in refused.err
        assert git(workspace, "rev-parse", "HEAD").strip() == head
        lock.unlink()
        undone = run_scribe(["undo"], workspace, env)
        assert undone.code == 0 and f"undid {head[:10]}" in undone.err, undone.err
    assert git(workspace, "rev-parse", "HEAD").strip() == base and not (workspace / "a.txt").exists()
    assert git(workspace, "status", "--porcelain") == ""


def test_a_commit_whose_index_cannot_follow_stands_with_a_warning(workspace: Path) -> None:
    """HEAD moved: the commit is returned (and so logged), the index failure is a warning, never a
    "failed" that hides a moved HEAD. Here the index file is immutable: the objects and the branch
    are written, but git cannot put a new index in its place."""
    (workspace / "a.txt").write_text("new\n")
    index = workspace / ".git" / "index"
    if subprocess.run(["chattr", "+i", str(index)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not possible here (needs root on ext4 or the like)")
    try:
        commit = commit_paths(workspace, ["a.txt"], "scribe: a\n\nScribe-Session: s1\n")
    finally:
        subprocess.run(["chattr", "-i", str(index)], check=True)
    assert commit is not None and commit.files == ["a.txt"]
    assert git(workspace, "rev-parse", "HEAD").strip() == commit.sha
    assert commit.warning is not None and "git's index was not updated" in commit.warning, commit.warning
    assert "git reset -q -- a.txt" in commit.warning
    assert git(workspace, "status", "--porcelain").split() == ["D", "a.txt", "??", "a.txt"]  # as warned


@pytest.mark.slow
def test_concurrent_auto_commits_in_one_workspace_all_land_or_fail_loudly(workspace: Path, home: Path) -> None:
    count = 8  # eight writers on two cores already race for the index lock on every run
    servers = [FakeMessagesServer(_write_run(f"f{i:02}.txt")) for i in range(count)]
    for server in servers:
        server.__enter__()
    try:
        procs = [subprocess.Popen([SCRIBE, "run", "-p", "full-auto", "--auto-commit", f"write f{i:02}"],
                                  cwd=workspace, env=scribe_env(server.base_url, home), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for i, server in enumerate(servers)]
        results = [(proc.wait(timeout=300), proc.stderr.read() if proc.stderr else "") for proc in procs]
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    committed = set(git(workspace, "ls-tree", "--name-only", "HEAD").split())
    for i, (code, err) in enumerate(results):
        name = f"f{i:02}.txt"
        if code == 0:
            assert name in committed and "failed" not in err, err
        else:
            assert name not in committed and "auto-commit failed, nothing committed" in err, err
    # every commit scribe made is on the branch and in a log, once
    history = git(workspace, "rev-list", "HEAD").split()
    logged = _commits_logged(workspace)
    assert len(logged) == len(set(logged)) == sum(code == 0 for code, _ in results)
    assert set(logged) <= set(history)
    assert git(workspace, "status", "--porcelain", "--untracked-files=all").split() == [
        token for i, (code, _) in enumerate(results) if code for token in ("??", f"f{i:02}.txt")]
