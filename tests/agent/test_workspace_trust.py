"""A repository is not trusted until its person says so, through the real `scribe` executable in
a fresh `git clone` of a hostile repository (tests/hostile.py): its own config and MCP servers
apply only once trusted, its instruction files cannot reach outside it, a `.scribe` it commits
as a link is refused, and what scribe keeps is private to the person."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pexpect
import pytest

from helpers import NO_API, SCRIBE, events_of, run_scribe, scribe_env, session_logs, trust, wait_for
from hostile import HostileRepository
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import SessionEvent, ToolResultEvent

IGNORED = ("scribe: ignored this workspace's .scribe/config.toml (permission_mode, sandbox, allowed_paths, "
           "trust_mcp_json, 1 MCP server) and .mcp.json (1 MCP server): not trusted; `scribe trust` to apply them")
QUESTION = r"Trust this workspace and apply them\? \[y/N\] "


@pytest.fixture
def hostile(tmp_path: Path) -> HostileRepository:
    return HostileRepository.create(tmp_path)


@pytest.fixture
def clone(tmp_path: Path, hostile: HostileRepository) -> Path:
    """A fresh clone of a repository whose config lifts every protection and whose two MCP
    servers (one in each file) would leave the marker."""
    hostile.with_config().with_mcp_json()
    return hostile.clone(tmp_path / "clone")


def header_of(workspace: Path) -> SessionEvent:
    header = events_of(session_logs(workspace)[-1])[0]
    assert isinstance(header, SessionEvent)
    return header


def results(workspace: Path) -> list[ToolResultEvent]:
    return [e for e in events_of(session_logs(workspace)[-1]) if isinstance(e, ToolResultEvent)]


# -- row 1: the workspace's own config and servers ----------------------------------------------------

def test_scribe_run_in_a_hostile_clone_keeps_the_persons_settings_and_starts_no_server(
        clone: Path, hostile: HostileRepository, home: Path) -> None:
    planted = hostile.outside / "planted.txt"
    write = tool_use_block("write_file", {"path": str(planted), "content": "from the model\n"})
    with FakeMessagesServer([Reply([write]), Reply.text("hello")]) as server:
        ran = run_scribe(["run", "hello"], clone, scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S="3"))
    assert ran.code == 0, ran.err
    # One line says what was ignored (then the tool line the text output shows).
    assert ran.err.splitlines()[0] == IGNORED and ran.err.count("ignored") == 1
    assert not hostile.ran.exists()  # neither server's program ran
    header = header_of(clone)
    assert (header.config["permission_mode"], header.config["sandbox"], header.config["allowed_paths"]) == \
        ("accept-edits", True, [])
    assert header.mcp == [] and header.protection.get("kind") != "none"
    [result] = results(clone)
    assert result.is_error and "outside the workspace" in result.output  # accept-edits keeps to the workspace
    assert not planted.exists()


def test_the_question_is_answered_yes_only_by_a_yes(clone: Path, hostile: HostileRepository, home: Path) -> None:
    with FakeMessagesServer([]) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        for answer in ("yes, but first tell me what it does", "", "no"):
            child = pexpect.spawn(SCRIBE, [], cwd=str(clone), env=env, dimensions=(40, 200), encoding="utf-8",
                                  timeout=30)
            try:
                child.expect('permission_mode = "full-auto", sandbox = false, allowed_paths = \\["/"\\]')
                child.expect("starts MCP server evil")
                child.expect(QUESTION)
                child.send(answer + "\r")
                child.expect("ignored this workspace's .scribe/config.toml")
                child.expect("permission mode ask")  # the person's default, not the file's full-auto
                child.expect("›")
                child.send("/exit\r")
                child.expect(pexpect.EOF)
            finally:
                child.close()
            assert not hostile.ran.exists(), answer
            assert header_of(clone).mcp == [] and header_of(clone).config["sandbox"] is True  # no server was even tried
        assert not (home / ".config" / "scribe" / "trusted.toml").exists()

        child = pexpect.spawn(SCRIBE, [], cwd=str(clone), env=env, dimensions=(40, 200), encoding="utf-8",
                              timeout=30)
        try:
            child.expect(QUESTION)
            child.send("y\r")
            child.expect("permission mode full-auto")  # a deliberate yes applies the file
            child.expect("›")
            assert wait_for(hostile.ran.exists)  # the servers were started: the question is what held them back
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    assert str(clone.resolve()) in (home / ".config" / "scribe" / "trusted.toml").read_text()


def test_trust_is_the_persons_act_and_a_changed_file_is_a_strangers_again(
        clone: Path, hostile: HostileRepository, home: Path) -> None:
    env = scribe_env(NO_API, home)
    shown = run_scribe(["config", "--json"], clone, env).json()
    assert {k: shown["permission_mode"][k] for k in ("value", "source")} == {"value": "accept-edits", "source": "default"}
    assert shown["workspace_trust"]["value"] == {"trusted": False, "ignored": [".mcp.json", ".scribe/config.toml"],
                                                 "reason": "not trusted"}
    text = run_scribe(["config"], clone, env).out
    assert f"workspace {clone}: {IGNORED.removeprefix('scribe: ')}" in text

    # Through a link to the clone: trust is kept under the real path.
    link = clone.parent / "link-to-clone"
    link.symlink_to(clone)
    trust(link, home)
    shown = run_scribe(["config", "--json"], clone, env).json()
    assert {k: shown["permission_mode"][k] for k in ("value", "source")} == {"value": "full-auto", "source": str(clone / ".scribe" / "config.toml")}
    assert shown["sandbox"]["value"] is False and shown["workspace_trust"]["value"]["trusted"] is True

    # A pull (or a command, or the agent's write_file) changes .mcp.json: asked about again.
    (clone / ".mcp.json").write_text((clone / ".mcp.json").read_text().replace("helper", "helper2"))
    ran = run_scribe(["config", "--json"], clone, env)
    assert ran.json()["permission_mode"]["source"] == "default"
    assert "its files changed since you trusted it" in ran.json()["workspace_trust"]["value"]["reason"]

    assert run_scribe(["trust", "--revoke"], clone, env).out.startswith("no longer trusted: ")
    assert run_scribe(["trust", "--list"], clone, env).out == ""


def test_trust_workspace_applies_the_files_for_one_run(clone: Path, hostile: HostileRepository, home: Path) -> None:
    with FakeMessagesServer([Reply.text("hello")]) as server:
        ran = run_scribe(["run", "--trust-workspace", "hello"], clone,
                         scribe_env(server.base_url, home, SCRIBE_MCP_START_TIMEOUT_S="3"))
    assert ran.code == 0, ran.err
    assert "ignored this workspace" not in ran.err
    assert header_of(clone).config["permission_mode"] == "full-auto"
    assert hostile.ran.exists()  # the flag is the person's act: the servers start
    assert not (home / ".config" / "scribe" / "trusted.toml").exists()  # for this run only


def test_an_untrusted_config_that_does_not_parse_is_ignored_not_fatal(hostile: HostileRepository, tmp_path: Path,
                                                                      home: Path) -> None:
    (hostile.root / ".scribe").mkdir()
    (hostile.root / ".scribe" / "config.toml").write_text("permission_mode = \n")
    clone = hostile.commit(".scribe/config.toml", message="broken").clone(tmp_path / "clone")
    with FakeMessagesServer([Reply.text("hello")]) as server:
        ran = run_scribe(["run", "hello"], clone, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert ran.err.splitlines() == ["scribe: ignored this workspace's .scribe/config.toml (not valid TOML): "
                                    "not trusted; `scribe trust` to apply them"]


def test_a_state_folder_the_person_moved_out_of_the_workspace_is_theirs(clone: Path, tmp_path: Path,
                                                                        home: Path) -> None:
    state = tmp_path / "my-state"
    state.mkdir()
    (state / "config.toml").write_text("max_turns = 7\n")
    shown = run_scribe(["config", "--json"], clone, scribe_env(NO_API, home, SCRIBE_HOME=str(state))).json()
    assert shown["max_turns"] == {"value": 7, "source": str(state / "config.toml")}
    # The clone's own .scribe/config.toml is not the state folder's now; its .mcp.json is still the clone's.
    assert shown["workspace_trust"]["value"]["ignored"] == [".mcp.json"]


# -- row 3: instruction files ------------------------------------------------------------------------

def test_instruction_files_that_lead_outside_the_workspace_are_not_sent(hostile: HostileRepository, tmp_path: Path,
                                                                        home: Path) -> None:
    clone = hostile.with_instruction_links().clone(tmp_path / "clone")
    assert (clone / "AGENTS.md").is_symlink() and (clone / "AGENTS.md").read_text() == hostile.secret + "\n"
    with FakeMessagesServer([Reply.text("hello")]) as server:
        ran = run_scribe(["run", "hello"], clone, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    assert ran.err.splitlines() == [
        f"scribe: note: AGENTS.md was not read into the instructions: it leads to {hostile.outside_secret}, "
        "outside the workspace (read_file refuses it too)",
        f"scribe: note: CLAUDE.md was not read into the instructions: it leads to {hostile.outside / 'shadow'}, "
        "outside the workspace (read_file refuses it too)"]
    assert server.requests and all(hostile.secret.encode() not in r.body for r in server.requests)
    assert hostile.secret.encode() not in session_logs(clone)[0].read_bytes()
    assert header_of(clone).sources == []


def test_instruction_files_are_redacted_as_tool_output_is(workspace: Path, home: Path) -> None:
    token = "tok-" + "9" * 20
    (workspace / "AGENTS.md").write_text(f"Deploy with DEPLOY_TOKEN={token} and keep tests green.\n")
    with FakeMessagesServer([Reply.text("hello")]) as server:
        ran = run_scribe(["run", "hello"], workspace, scribe_env(server.base_url, home, DEPLOY_TOKEN=token))
    assert ran.code == 0, ran.err
    system = json.dumps(server.requests[0].json["system"])
    assert "keep tests green" in system and "[redacted DEPLOY_TOKEN]" in system
    assert all(token.encode() not in r.body for r in server.requests)
    assert token.encode() not in session_logs(workspace)[0].read_bytes()


# -- row 6: a .scribe that is a link ------------------------------------------------------------------

@pytest.mark.parametrize("where", ["outside", "inside"])
def test_a_committed_state_link_is_refused(hostile: HostileRepository, tmp_path: Path, home: Path,
                                           where: str) -> None:
    if where == "inside":  # a folder of the repository's own, that write_file could rewrite
        (hostile.root / "visible").mkdir()
        (hostile.root / "visible" / "config.toml").write_text('permission_mode = "full-auto"\nsandbox = false\n')
        hostile.commit("visible/config.toml", message="visible")
        target, chosen = "visible", None
    else:
        chosen = tmp_path / "chosen"
        chosen.mkdir()
        target = str(chosen)
    clone = hostile.with_state_link(target).clone(tmp_path / "clone")
    chosen = chosen or clone / "visible"
    env = scribe_env(NO_API, home)
    for args in (["run", "hello"], ["config"], ["config", "--json"], ["log", "list"], ["trust"]):
        ran = run_scribe(args, clone, env)
        assert ran.code == 2, (args, ran.out, ran.err)
        assert ran.err == f"scribe: {clone / '.scribe'} is a symbolic link (to {target}); scribe keeps its state " \
                          "only in a real folder: remove the link, or set SCRIBE_HOME\n", args
        assert "full-auto" not in ran.out and "Traceback" not in ran.err
    assert not (chosen / "sessions").exists()  # no transcript where the repository chose


def test_the_agents_file_tools_never_reach_scribes_own_folders(workspace: Path, home: Path) -> None:
    """A state folder SCRIBE_HOME keeps inside the workspace (under another name), and the
    person's config folder, which allowed_paths opens to the file tools."""
    state = workspace / "state"
    config = home / ".config" / "scribe"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(f"allowed_paths = [{json.dumps(str(home))}]\n")
    calls = [tool_use_block("write_file", {"path": "state/config.toml", "content": 'permission_mode = "full-auto"\n'}),
             tool_use_block("write_file", {"path": str(config / "trusted.toml"), "content": "[[workspace]]\n"}),
             tool_use_block("read_file", {"path": str(config / "config.toml")}),
             tool_use_block("write_file", {"path": str(home / "notes.txt"), "content": "allowed\n"})]
    with FakeMessagesServer([Reply(calls), Reply.text("done")]) as server:
        ran = run_scribe(["run", "go"], workspace, scribe_env(server.base_url, home, SCRIBE_HOME=str(state)))
    assert ran.code == 0, ran.err
    [log] = (state / "sessions").glob("*.jsonl")
    found = [e for e in events_of(log) if isinstance(e, ToolResultEvent)]
    assert [r.is_error for r in found] == [True, True, True, False]
    assert all("scribe's own state or config" in r.output for r in found[:3])
    assert not (state / "config.toml").exists() and not (config / "trusted.toml").exists()
    assert (home / "notes.txt").read_text() == "allowed\n"  # the allowed path itself still works


# -- row 11: private by default -----------------------------------------------------------------------

def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_what_scribe_keeps_is_private_under_umask_022(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("hello")]) as server:
        env = scribe_env(server.base_url, home, EDITOR="true")
        ran = subprocess.run(["sh", "-c", f"umask 022 && exec {SCRIBE} run hello"], cwd=workspace, env=env,
                             capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr
        notes = subprocess.run(["sh", "-c", f"umask 022 && exec {SCRIBE} notes edit"], cwd=workspace, env=env,
                               capture_output=True, text=True, timeout=60)
        assert notes.returncode == 0, notes.stderr
    (workspace / ".mcp.json").write_text("{}")
    subprocess.run(["sh", "-c", f"umask 022 && exec {SCRIBE} trust"], cwd=workspace, env=env, check=True,
                   capture_output=True, timeout=60)
    state = workspace / ".scribe"
    [log] = session_logs(workspace)
    assert (mode(state), mode(state / "sessions")) == (0o700, 0o700)
    files = [log, log.with_suffix(".lock"), state / "notes.md", *log.parent.glob("*.checkpoint*")]
    assert len(files) >= 4, sorted(log.parent.iterdir())
    assert {str(f.name): mode(f) for f in files} == {str(f.name): 0o600 for f in files}
    trusted = home / ".config" / "scribe" / "trusted.toml"
    assert (mode(trusted), mode(trusted.parent)) == (0o600, 0o700)


def test_the_repl_history_is_private(workspace: Path, home: Path) -> None:
    env = scribe_env(NO_API, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn("sh", ["-c", f"umask 022 && exec {SCRIBE}"], cwd=str(workspace), env=env,
                          dimensions=(40, 120), encoding="utf-8", timeout=30)
    try:
        child.expect("›")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    deadline = time.monotonic() + 5
    while not (workspace / ".scribe" / "history").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mode(workspace / ".scribe" / "history") == 0o600
    assert os.path.isdir(workspace / ".scribe") and mode(workspace / ".scribe") == 0o700


def test_the_question_and_scribe_trust_name_the_secrets_a_workspace_server_would_be_given(
        workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scribe.settings.files import trust_of
    from scribe.settings.untrusted import question

    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "tracker": {"command": "node", "args": ["server.js"],
                    "env": {"TOKEN": "${GITHUB_TOKEN}", "WHERE": "${HOME}", "DB": "${DATABASE_URL}"}},
        "search": {"type": "http", "url": "https://search.example/mcp?key=${ANTHROPIC_API_KEY}",
                   "headers": {"Authorization": "Bearer ${SEARCH_API_KEY:-none}"}},
        "plain": {"command": "python3", "args": ["-m", "plain", "--home", "${HOME}"]},
        "off": {"command": "x", "env": {"K": "${OPENAI_API_KEY}"}, "enabled": False},
    }}))
    env = scribe_env(NO_API, home, DATABASE_URL="postgres://app:hunter2@db/app")
    expected = ("gives server tracker your DATABASE_URL, GITHUB_TOKEN; "
                "gives server search your ANTHROPIC_API_KEY, SEARCH_API_KEY")
    monkeypatch.setenv("DATABASE_URL", env["DATABASE_URL"])  # a secret by its value
    [line] = [line for line in question(trust_of(workspace)) if ".mcp.json" in line]
    assert line.endswith(expected), line  # before the person answers (the REPL)
    assert "plain" not in line.split(";", 1)[1] and "OPENAI" not in line and "HOME" not in line.split(";", 1)[1]
    ran = run_scribe(["trust"], workspace, env)
    assert ran.code == 0 and expected in ran.out  # and what `scribe trust` just applied
