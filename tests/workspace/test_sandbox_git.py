"""A sandboxed command cannot change what git runs outside the sandbox: `.git`'s configuration,
hooks and pointers are read-only to it and `.git` cannot be moved or replaced, and a git folder
outside the workspace is writable only when it verifiably belongs to it. Through the real
`scribe` executable, real git and real bubblewrap."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, make_repository
from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import GitCommitEvent, ToolResultEvent
from scribe.workspace.git.folders import command_protection

needs_sandbox = pytest.mark.skipif(not command_protection(Path("/")).sandboxed,
                                   reason="bubblewrap cannot create namespaces here")


def command_run(command: str) -> list[Reply]:
    return [Reply([tool_use_block("run_command", {"command": command})]), Reply([text_block("done")])]


def outputs(workspace: Path) -> list[str]:
    return [e.output for log in session_logs(workspace) for e in events_of(log) if isinstance(e, ToolResultEvent)]


@needs_sandbox
def test_a_sandboxed_command_cannot_plant_what_scribes_git_would_run(workspace: Path, home: Path,
                                                                     tmp_path: Path) -> None:
    marker = tmp_path / "marker"  # outside the sandbox's view: /tmp is private in there
    config_before = (workspace / ".git" / "config").read_bytes()
    hostile = (
        f"printf '#!/bin/sh\\necho ran >> {marker}\\n' > .git/m.sh; chmod +x .git/m.sh; "
        "git config core.fsmonitor $PWD/.git/m.sh; echo config=$?; "
        "cp .git/m.sh .git/hooks/reference-transaction; echo hook=$?; "
        "mkdir -p evil/hooks && cp .git/m.sh evil/hooks/post-index-change && "
        "printf '[core]\\n\\tfsmonitor = %s\\n\\thooksPath = %s\\n' $PWD/.git/m.sh $PWD/evil/hooks > evil/config; "
        "echo ../evil > .git/commondir; "
        "mv .git .git-old; echo mv=$?")
    script = [*command_run(hostile),
              Reply([tool_use_block("list_files", {}), tool_use_block("search_files", {"pattern": "workspace"})]),
              Reply([text_block("looked")]),
              Reply([tool_use_block("write_file", {"path": "a.txt", "content": "agent\n"})]), Reply([text_block("ok")])]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        planted = run_scribe(["run", "-p", "full-auto", "plant it"], workspace, env)
        assert planted.code == 0, planted.err
        [said] = outputs(workspace)
        assert "config=4" in said and "could not write config file" in said, said
        assert "hook=1" in said and "Read-only file system" in said, said
        assert "mv=1" in said and "Device or resource busy" in said, said
        assert "removed what the command created where git reads its configuration" in said, said
        assert (workspace / ".git" / "config").read_bytes() == config_before
        assert not (workspace / ".git" / "hooks" / "reference-transaction").exists()
        assert not (workspace / ".git" / "commondir").exists() and (workspace / ".git").is_dir()

        looked = run_scribe(["run", "-p", "read-only", "look"], workspace, env)
        assert looked.code == 0, looked.err
        wrote = run_scribe(["run", "-p", "full-auto", "--auto-commit", "write a"], workspace, env)
        assert wrote.code == 0 and "committed" in wrote.err, wrote.err
        assert [e for log in session_logs(workspace) for e in events_of(log) if isinstance(e, GitCommitEvent)]
        diff = run_scribe(["diff"], workspace, env)
        assert diff.code == 0, diff.err
        undo = run_scribe(["undo"], workspace, env)
        assert undo.code == 0 and "undid" in undo.err, undo.err
    # the person's own git, too, runs nothing the command planted
    git(workspace, "status")
    assert not marker.exists(), marker.read_text()


@needs_sandbox
def test_a_gitdir_pointer_a_command_wrote_does_not_open_another_repository(home: Path, tmp_path: Path) -> None:
    other = make_repository(tmp_path / "other")
    hooks_before = sorted(p.name for p in (other / ".git" / "hooks").iterdir())
    repo = make_repository(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()
    # In a repository the command cannot replace .git at all; in a plain folder it can write one.
    replace = f"mv .git .git-old; printf 'gitdir: {other}/.git\\n' > .git; echo replaced=$?"
    write = f"printf 'gitdir: {other}/.git\\n' > .git; echo wrote=$?"
    reach = (f"touch {other}/.git/marker; echo touch=$?; echo 'echo ran' > {other}/.git/hooks/post-commit; "
             "echo hook=$?")
    with FakeMessagesServer([*command_run(replace), *command_run(write), *command_run(reach)]) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", "-p", "full-auto", "replace .git"], repo, env).code == 0
        assert (repo / ".git").is_dir() and git(repo, "rev-parse", "--verify", "HEAD")
        [said] = outputs(repo)
        assert "replaced=1" in said, said
        assert run_scribe(["run", "-p", "full-auto", "write .git"], plain, env).code == 0
        assert (plain / ".git").read_text() == f"gitdir: {other}/.git\n"
        # the next session: the pointer is not believed
        assert run_scribe(["run", "-p", "full-auto", "reach"], plain, env).code == 0
    said = outputs(plain)[-1]
    assert "touch=1" in said and "hook=1" in said, said
    assert not (other / ".git" / "marker").exists()
    assert sorted(p.name for p in (other / ".git" / "hooks").iterdir()) == hooks_before
    header = events_of(session_logs(plain)[-1])[0]
    [refused] = header.protection["refused"]
    assert refused.startswith(f"{other.resolve()}/.git: not writable") and "point back" in refused, refused
    assert str(other.resolve()) not in " ".join(header.protection["writable"])


@needs_sandbox
def test_a_submodules_git_folder_is_writable_and_its_config_is_not(tmp_path: Path) -> None:
    """A submodule's git folder lives in the superproject's .git/modules/: it belongs to the
    submodule (its core.worktree points back), so the submodule's own commits work."""
    from scribe.tools.base import ToolContext
    from scribe.tools.registry import builtin_tools, run_tool

    library = make_repository(tmp_path / "library")
    project = make_repository(tmp_path / "project")
    git(project, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", str(library), "lib")
    sub = project / "lib"
    modules = (project / ".git" / "modules" / "lib").resolve()
    protection = command_protection(sub)
    assert str(modules) in protection.writable and not protection.refused
    assert str(modules / "config") in protection.read_only
    command = ("git -c user.name=t -c user.email=t@e.invalid commit -q --allow-empty -m inside && "
               "git log -1 --format=%s; git config core.fsmonitor /bin/true; echo config=$?")
    out = run_tool(builtin_tools(), "run_command", {"command": command}, ToolContext(workspace=sub,
                                                                                     protection=protection))
    assert out.text.splitlines()[0] == "inside" and "config=4" in out.text, out.text
