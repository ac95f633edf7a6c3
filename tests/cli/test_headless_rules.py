"""Permission rules through the real CLI, headless (`scribe run`, in process) and in `scribe
config`, against the fake API: the model's command is what a rule is matched on, and a marker
file each command would write says on disk whether it ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import NO_API, events_of, run_scribe, scribe_env, session_logs, trust
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import ToolResultEvent


def user_config(home: Path, text: str) -> Path:
    path = home / ".config" / "scribe" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def workspace_config(workspace: Path, text: str) -> Path:
    path = workspace / ".scribe" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run_calls(workspace: Path, home: Path, calls: list[tuple[str, dict]], *flags: str) -> tuple[list[ToolResultEvent], str]:
    """`scribe run` with `flags`, whose model makes `calls` one by one, then stops; the results
    as logged, and what scribe said on stderr."""
    script = [Reply([tool_use_block(tool, args)]) for tool, args in calls] + [Reply.text("done")]
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", *flags, "do it"], workspace, scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    results = [e for e in events_of(session_logs(workspace)[-1]) if isinstance(e, ToolResultEvent)]
    assert len(results) == len(calls)
    return results, ran.err


@pytest.mark.parametrize("command", [
    "touch marker",
    "git status; touch marker",
    "git status && touch marker",
    "bash -c 'touch marker'",
    'echo "$(touch marker)"',
    "echo `touch marker`",
    "/usr/bin/touch marker",
    "env X=1 touch marker",
    "(cd . && touch marker)",
])
def test_in_full_auto_a_denied_command_never_runs(workspace: Path, home: Path, command: str) -> None:
    config = user_config(home, '[permissions]\ndeny = ["run_command(touch *)"]\n')
    [result], _ = run_calls(workspace, home, [("run_command", {"command": command})], "-p", "full-auto")
    assert not (workspace / "marker").exists()
    assert result.is_error and result.output == (
        f"run_command was refused by the deny rule run_command(touch *) (from {config}): `touch marker` matches it")
    assert result.extra["permission"] == "denied"
    assert result.extra["rules"] == [{"verdict": "deny", "rule": "run_command(touch *)", "source": str(config)}]


def test_a_disallowed_path_is_refused_whatever_way_leads_there(workspace: Path, home: Path) -> None:
    (workspace / "secrets").mkdir()
    (workspace / "notes").symlink_to("secrets")
    calls = [("write_file", {"path": "notes/key.txt", "content": "x\n"}),
             ("write_file", {"path": "secrets/../plain.txt", "content": "y\n"})]
    results, _ = run_calls(workspace, home, calls, "-p", "full-auto", "--disallowed-tools", "write_file(secrets/**)")
    assert results[0].is_error and results[0].output.startswith(
        "write_file was refused by the deny rule write_file(secrets/**) (from --disallowed-tools): ")
    assert not (workspace / "secrets" / "key.txt").exists()
    assert not results[1].is_error and (workspace / "plain.txt").read_text() == "y\n"  # resolved: not in secrets/


def test_an_allowed_command_runs_headless_and_a_line_that_only_starts_with_it_does_not(
        workspace: Path, home: Path) -> None:
    calls = [("run_command", {"command": "touch ran-one"}),
             ("run_command", {"command": "touch ran-two; touch other"}),
             ("run_command", {"command": "touch ran-three > other"})]
    results, _ = run_calls(workspace, home, calls, "--allowedTools", "run_command(touch ran-*)")  # accept-edits
    assert (workspace / "ran-one").exists() and not results[0].is_error
    assert results[0].extra["rules"] == [{"verdict": "allow", "rule": "run_command(touch ran-*)",
                                          "source": "--allowed-tools"}]
    assert "permission" not in results[0].extra  # allowed outright, by the rule
    assert not (workspace / "ran-two").exists() and not (workspace / "other").exists()
    assert results[1].is_error and results[1].output.startswith(
        "run_command is not allowed in permission mode 'accept-edits'; the user can allow it with --permission-mode "
        "full-auto, or with an allow rule (--allowed-tools ")
    assert results[2].is_error and not (workspace / "ran-three").exists()  # its output goes to a file


def test_an_ask_rule_asks_even_in_full_auto_and_headless_that_is_a_refusal(workspace: Path, home: Path) -> None:
    config = user_config(home, '[permissions]\nask = ["run_command(git push*)", "run_command(touch *)"]\n')
    [result], _ = run_calls(workspace, home, [("run_command", {"command": "git status && touch marker"})],
                            "-p", "full-auto")
    assert not (workspace / "marker").exists()
    assert result.is_error and result.output == (
        f"run_command was not run: the ask rule run_command(touch *) (from {config}) asks the user first: "
        "`touch marker` matches it, and nobody can answer in this run")


def test_a_bad_rule_is_one_line_naming_it_and_its_file(workspace: Path, home: Path) -> None:
    config = user_config(home, '[permissions]\nallow = ["Bash(git status:*)"]\n')
    ran = run_scribe(["run", "hi"], workspace, scribe_env(NO_API, home))
    assert ran.code == 2
    assert ran.err == (f"scribe: {config}: allow rule 'Bash(git status:*)': Bash is Claude Code's name; scribe's "
                       "tool is run_command\n")
    flag = run_scribe(["run", "--disallowed-tools", "web_fetch(docs.python.org)", "hi"], workspace,
                      scribe_env(NO_API, home))
    assert flag.code == 2 and flag.err.startswith("scribe: --disallowed-tools: deny rule 'web_fetch(docs.python.org)'")


def test_scribe_config_lists_the_rules_and_where_each_came_from(workspace: Path, home: Path) -> None:
    mine = user_config(home, '[permissions]\nallow = ["run_command(git status:*)"]\ndeny = ["run_command(rm *)"]\n')
    own = workspace_config(workspace, '[permissions]\nask = ["run_command(git push*)"]\n'
                                      'allow = ["run_command(touch *)"]\n')
    env = scribe_env(NO_API, home)

    # untrusted: the workspace's rules are ignored, and one line says so
    ran = run_scribe(["config"], workspace, env)
    assert ran.code == 0, ran.err
    listed = ran.out.split("permission rules (deny first, then ask, then allow; the mode decides the rest):\n")[1]
    assert listed.splitlines()[:2] == [f"  deny   run_command(rm *)          {mine}",
                                       f"  allow  run_command(git status:*)  {mine}"]
    assert "git push" not in ran.out and "touch" not in ran.out.split("permission rules")[1]
    assert ("ignored this workspace's .scribe/config.toml (2 permission rules): not trusted; `scribe trust` to "
            "apply them") in ran.out
    script = [Reply([tool_use_block("run_command", {"command": "touch marker"})]), Reply.text("done")]
    with FakeMessagesServer(script) as server:
        untrusted = run_scribe(["run", "go"], workspace, scribe_env(server.base_url, home))
    assert "ignored this workspace's .scribe/config.toml (2 permission rules)" in untrusted.err
    assert not (workspace / "marker").exists()  # its allow rule did not apply

    trust(workspace, home)
    as_json = run_scribe(["config", "--json"], workspace, env).json()["permission_rules"]
    assert as_json == {"value": [
        {"verdict": "deny", "rule": "run_command(rm *)", "source": str(mine)},
        {"verdict": "allow", "rule": "run_command(git status:*)", "source": str(mine)},
        {"verdict": "ask", "rule": "run_command(git push*)", "source": str(own)},
        {"verdict": "allow", "rule": "run_command(touch *)", "source": str(own)}], "source": "config"}
    with FakeMessagesServer(script) as server:
        trusted = run_scribe(["run", "go"], workspace, scribe_env(server.base_url, home))
    assert trusted.code == 0 and (workspace / "marker").exists()


def test_an_untrusted_workspace_cannot_deny_what_the_person_allows_nor_the_reverse(
        workspace: Path, home: Path) -> None:
    """Its rules are a stranger's: neither its allows nor its denies apply until it is trusted."""
    workspace_config(workspace, '[permissions]\ndeny = ["read_file"]\n')
    results, err = run_calls(workspace, home, [("read_file", {"path": "README.md"})])
    assert not results[0].is_error and "test workspace" in results[0].output
    assert "ignored this workspace's .scribe/config.toml (1 permission rule)" in err
    shown = json.loads(run_scribe(["config", "--json"], workspace, scribe_env(NO_API, home)).out)
    assert shown["permission_rules"]["value"] == []
