"""A fresh clone of a repository holding every hostile file at once: its own settings and MCP
servers, instruction files that lead outside it, and a `.git` whose config, hooks and attributes
name programs. `scribe run` and the REPL, in their default modes, through the real executable,
real git and (where it can be had) real bubblewrap: no program of the repository's runs (the
marker file is never made), no file from outside the workspace reaches a request or the log,
and the person is told in one line what was ignored. A second clone commits `.scribe` as a
link as well: it is refused before anything runs."""

from __future__ import annotations

import time
from pathlib import Path

import pexpect

from conftest import git
from helpers import SCRIBE, run_scribe, scribe_env, session_logs
from hostile import HOOKS, HostileRepository, plant
from scribe.cli.repl.question import GUARD_S
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block

QUESTION = r"Trust this workspace and apply them\? \[y/N\] "


def _every_hostile_file(tmp_path: Path) -> HostileRepository:
    hostile = HostileRepository.create(tmp_path)
    hostile.with_config().with_mcp_json().with_instruction_links()
    # Attributes that route every file through the repository's filter and textconv.
    (hostile.root / ".gitattributes").write_text("* filter=x diff=t\n")
    (hostile.root / "notes.txt").write_text("the notes\n")
    hostile.commit(".gitattributes", "notes.txt", message="attributes")
    evil, marker = hostile.outside / "evil", hostile.ran

    def plant_git(clone: Path) -> None:
        """What a clone does not carry, as a command or a person's tool could leave it."""
        for name in HOOKS:
            plant(clone / ".git" / "hooks" / name, marker, f"hook {name}")
            plant(evil / "hooks" / name, marker, f"hooksPath {name}")
        config = {
            "core.fsmonitor": plant(evil / "fsmonitor", marker, "fsmonitor"),
            "core.hooksPath": evil / "hooks",
            "filter.x.clean": f"{plant(evil / 'clean', marker, 'clean', True)} %f",
            "filter.x.smudge": f"{plant(evil / 'smudge', marker, 'smudge', True)} %f",
            "diff.t.textconv": plant(evil / "textconv", marker, "textconv", True),
            "diff.external": plant(evil / "external", marker, "diff.external"),
            "core.pager": plant(evil / "pager", marker, "pager", True),
        }
        for key, value in config.items():
            git(clone, "config", key, str(value))

    hostile.in_clone.append(plant_git)
    return hostile


def _seen(server: FakeMessagesServer) -> str:
    return b"".join(r.body for r in server.requests).decode("utf-8", errors="replace")


def test_a_clone_of_every_hostile_file_runs_nothing_of_its_own_and_sends_nothing_from_outside(
        tmp_path: Path, home: Path) -> None:
    hostile = _every_hostile_file(tmp_path)
    clone = hostile.clone(tmp_path / "clone")
    (clone / "notes.txt").write_text("the notes\nchanged by the person\n")
    # The planted programs are live: the person's own git runs them.
    git(clone, "diff", "--stat")
    assert hostile.ran.exists(), "the fixture plants nothing git would run"
    git(clone, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "filter.x.clean=",
        "checkout", "-q", "--", "notes.txt")
    hostile.ran.unlink()

    looks = [Reply([tool_use_block("list_files", {}), tool_use_block("search_files", {"pattern": "notes"}),
                    tool_use_block("read_file", {"path": "AGENTS.md"})]),
             Reply([tool_use_block("write_file", {"path": "plan.md", "content": "# plan\n"})]),
             Reply([text_block("looked around")])]
    with FakeMessagesServer([*looks, *looks]) as server:
        env = scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S="3", TERM="xterm-256color")
        ran = run_scribe(["run", "look around"], clone, env)
        assert ran.code == 0, ran.err
        assert ran.err.splitlines()[0].startswith("scribe: ignored this workspace's .scribe/config.toml"), ran.err
        diff = run_scribe(["diff"], clone, env)
        assert diff.code == 0, diff.err

        child = pexpect.spawn(SCRIBE, [], cwd=str(clone), env=env, dimensions=(40, 200), encoding="utf-8",
                              timeout=60)
        try:
            child.expect(QUESTION)
            child.send("\r")  # Enter: no
            child.expect("ignored this workspace's .scribe/config.toml")
            child.expect("›")
            child.send("look around\r")
            child.expect("allow write_file")  # the REPL's own default: ask
            time.sleep(GUARD_S + 0.2)  # a deliberate answer, not a key typed ahead
            child.send("n")
            child.expect("looked around")
            child.expect("›")
            child.send("/diff\r")
            # its output first: a line typed while a command runs is kept for the person to send
            child.expect("changes since")
            child.expect("›")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        seen = _seen(server)

    assert not hostile.ran.exists(), hostile.ran.read_text()
    logs = "".join(p.read_text() for p in session_logs(clone))
    for text in (seen, logs):
        assert hostile.secret not in text  # AGENTS.md and CLAUDE.md lead outside: never read
    assert len(session_logs(clone)) == 2


def test_a_clone_that_also_commits_its_state_folder_as_a_link_is_refused_before_anything_runs(
        tmp_path: Path, home: Path) -> None:
    hostile = HostileRepository.create(tmp_path)
    hostile.with_mcp_json().with_instruction_links().with_state_link(str(hostile.outside))
    clone = hostile.clone(tmp_path / "clone")
    with FakeMessagesServer([Reply([text_block("hello")])]) as server:
        ran = run_scribe(["run", "hello"], clone, scribe_env(server.base_url, home))
        assert not server.requests
    assert ran.code == 2 and len(ran.err.strip().splitlines()) == 1, ran.err
    assert ".scribe" in ran.err
    assert not hostile.ran.exists()
    assert not (hostile.outside / "sessions").exists()
