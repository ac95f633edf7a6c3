"""Permission rules in the interactive session: an allowed pattern never asks, a line that only
begins with one does, an ask rule asks and says why, and "always" can keep the exact command or
its prefix, for the session or in the person's or the workspace's config, only where they say.
In process (keys through prompt-toolkit's pipe), and once the real executable in a terminal for
`--allowed-tools`. Each command leaves a marker file, so whether it ran is on disk."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pexpect
import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs, spawn
from repl_driver import person, run_repl  # noqa: F401 - person: the autouse fixture of these tests
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import ToolResultEvent
from scribe.settings.files import trust_of

# How each call was decided, from the log: "approved", "approved_always" or "declined" when the
# person was asked (the question itself is drawn by prompt-toolkit, outside what rich prints),
# None when it ran without a question.
ASKED = ("approved", "approved_always", "declined")


def commands(*lines: str) -> list[Reply]:
    """The model runs each line, one call each, then says it is done."""
    return [Reply([tool_use_block("run_command", {"command": line})]) for line in lines] + [Reply.text("done")]


def user_config(tmp_path: Path, text: str = "") -> Path:
    path = tmp_path / "home" / ".config" / "scribe" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def results(workspace: Path) -> list[ToolResultEvent]:
    return [e for e in events_of(session_logs(workspace)[-1]) if isinstance(e, ToolResultEvent)]


def asked(workspace: Path) -> list[bool]:
    """Whether each call was put to the person."""
    return [r.extra.get("permission") in ASKED for r in results(workspace)]


def said(out: str) -> str:
    """What rich printed, its lines unwrapped."""
    return " ".join(out.split())


def test_in_ask_an_allowed_pattern_never_asks(workspace: Path, tmp_path: Path) -> None:
    user_config(tmp_path, '[permissions]\nallow = ["run_command(touch ran-*)", "run_command(git status:*)"]\n')
    # No key answers a question: one asked would take Ctrl-D at the end of the keys for a no.
    run_repl(workspace, commands("touch ran-one", "git status --short && touch ran-two"), "go\r")
    assert asked(workspace) == [False, False]
    assert (workspace / "ran-one").exists() and (workspace / "ran-two").exists()
    assert [r.is_error for r in results(workspace)] == [False, False]


def test_a_line_that_only_starts_with_an_allowed_command_asks(workspace: Path, tmp_path: Path) -> None:
    user_config(tmp_path, '[permissions]\nallow = ["run_command(touch ran-*)"]\n')
    run_repl(workspace, commands("touch ran-one; touch other", "touch ran-two | tee other"), "go\rn\rn\r")
    assert asked(workspace) == [True, True]
    assert not (workspace / "ran-one").exists() and not (workspace / "other").exists()
    assert not (workspace / "ran-two").exists()
    assert [r.output for r in results(workspace)] == ["run_command was declined by the user"] * 2


def test_an_ask_rule_asks_even_in_full_auto_and_names_itself(workspace: Path, tmp_path: Path) -> None:
    config = user_config(tmp_path, '[permissions]\nask = ["run_command(touch *)"]\n')
    ran = run_repl(workspace, commands("touch ran-one", "git status"), "go\ry\r", mode="full-auto")
    assert f"asked by the ask rule run_command(touch *) (from {config})" in said(ran.out)
    assert asked(workspace) == [True, False]  # git status: full-auto runs it
    assert (workspace / "ran-one").exists()


def test_always_can_save_the_prefix_in_the_persons_config(workspace: Path, tmp_path: Path) -> None:
    config = user_config(tmp_path, "# mine\nmax_turns = 9\n")
    keys = "go\ralways\r2\ru\r"  # always; the second rule offered (touch:*); in your config
    ran = run_repl(workspace, commands("touch ran-a", "touch ran-b", "echo more"), keys + "y\r")
    assert f"saved the allow rule run_command(touch:*) to {config}" in said(ran.out)
    text = config.read_text()
    assert text.startswith("# mine\n") and tomllib.loads(text) == {
        "max_turns": 9, "permissions": {"allow": ["run_command(touch:*)"]}}
    assert asked(workspace) == [True, False, True]  # touch ran-b ran without a question; echo is no touch
    assert (workspace / "ran-a").exists() and (workspace / "ran-b").exists()
    kept = results(workspace)[1].extra["rules"]
    assert kept == [{"verdict": "allow", "rule": "run_command(touch:*)", "source": str(config)}]
    listed = run_scribe(["config"], workspace, scribe_env("http://127.0.0.1:9", tmp_path / "home"))
    assert f"allow  run_command(touch:*)  {config}" in listed.out


def test_always_can_save_the_exact_command_in_the_workspaces_config_and_keep_it_trusted(
        workspace: Path, tmp_path: Path) -> None:
    keys = "go\ralways\r1\rw\ry\r"  # always; the exact command; in this workspace's config; then yes
    ran = run_repl(workspace, commands("touch ran-a", "touch ran-b", "touch ran-a"), keys)
    own = workspace / ".scribe" / "config.toml"
    assert f"saved the allow rule run_command(touch ran-a) to {own}" in said(ran.out)
    assert tomllib.loads(own.read_text()) == {"permissions": {"allow": ["run_command(touch ran-a)"]}}
    assert trust_of(workspace).trusted  # the person's own change: not a stranger's file
    assert asked(workspace) == [True, True, False]  # touch ran-b is not the exact command; the second ran-a is
    assert [r.is_error for r in results(workspace)] == [False, False, False]


def test_always_for_this_session_saves_nothing(workspace: Path, tmp_path: Path) -> None:
    ran = run_repl(workspace, commands("touch ran-a", "touch ran-b"), "go\ralways\rs\r")
    assert "saved the allow rule" not in said(ran.out)
    assert not (tmp_path / "home" / ".config" / "scribe" / "config.toml").exists()
    assert not (workspace / ".scribe" / "config.toml").exists()
    assert asked(workspace) == [True, False]  # run_command for the rest of the session, as "always" was
    assert (workspace / "ran-b").exists()


def test_always_where_no_rule_can_match_says_so(workspace: Path) -> None:
    ran = run_repl(workspace, commands("echo a > ran-a", "touch ran-b"), "go\ralways\r")
    assert "no rule can match this command line (output sent to ran-a)" in said(ran.out)
    assert asked(workspace) == [True, False] and (workspace / "ran-b").exists()


def test_a_bang_command_is_refused_by_a_deny_rule(workspace: Path, tmp_path: Path) -> None:
    config = user_config(tmp_path, '[permissions]\ndeny = ["run_command(touch *)"]\n')
    ran = run_repl(workspace, [Reply.text("ok")], "!echo hi && touch ran-bang\r", mode="full-auto")
    assert f"not run: the deny rule run_command(touch *) (from {config}) refuses it" in said(ran.out)
    assert not (workspace / "ran-bang").exists()


@pytest.mark.slow
def test_allowed_tools_on_the_command_line_of_the_interactive_session(workspace: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FakeMessagesServer(commands("touch ran-flag", "git status; touch ran-other")) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        child = spawn(["--allowed-tools", "run_command(touch ran-*) run_command(git status:*)",
                       "--disallowed-tools", "run_command(touch ran-other)"], workspace, env)
        try:
            child.expect("permission mode ask")
            child.expect("›")
            child.send("go\r")
            child.expect("done")
            child.expect("›")
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close()
    assert asked(workspace) == [False, False]
    assert (workspace / "ran-flag").exists() and not (workspace / "ran-other").exists()
    refused = results(workspace)[1]
    assert refused.output == ("run_command was refused by the deny rule run_command(touch ran-other) (from "
                              "--disallowed-tools): `touch ran-other` matches it")
