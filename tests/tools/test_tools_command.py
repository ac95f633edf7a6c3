"""run_command with real bash, in the sandbox and without one: exit codes, timeouts and cancels
that end everything a command started (setsid jobs too), bounded output, a scrubbed
environment."""

from __future__ import annotations

import resource
import threading
from pathlib import Path

import pytest

from helpers import running, sleep_argv, wait_for
from scribe.tools.base import OutputTail, ToolContext
from scribe.tools.command import RunCommand
from scribe.tools.registry import builtin_tools, run_tool
from scribe.tools.secrets import Redactor, command_env
from scribe.workspace.git.folders import command_protection

SANDBOXED = command_protection(Path("/")).sandboxed
ENDED = "the command and the processes it started were ended"
LEFT = "[ended with the command: 1 background process still running (everything a command starts ends when it does)]"


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, command_timeout_s=30)


@pytest.fixture(params=["sandbox", "no sandbox"])
def either(request: pytest.FixtureRequest, workspace: Path) -> ToolContext:
    """The same checks under each protection: what ends a command's processes differs (the
    sandbox's PID namespace, or the process group and the marker)."""
    if request.param == "sandbox" and not SANDBOXED:
        pytest.skip("bubblewrap cannot create namespaces here")
    protection = command_protection(workspace, enabled=request.param == "sandbox")
    return ToolContext(workspace=workspace, command_timeout_s=30, protection=protection)


def sleep(seconds: int) -> str:
    return " ".join(sleep_argv(seconds))


def run(ctx: ToolContext, command: str, **extra: object) -> tuple[str, bool, int | None, int]:
    out = run_tool(builtin_tools(), "run_command", {"command": command, **extra}, ctx)
    return out.text, out.is_error, out.exit_code, out.dropped_bytes


def test_success_runs_in_workspace_with_merged_output(ctx: ToolContext, workspace: Path) -> None:
    text, is_error, code, dropped = run(ctx, "pwd; echo out; echo err >&2")
    assert (text, is_error, code, dropped) == (f"{workspace.resolve()}\nout\nerr\n", False, 0, 0)


def test_nonzero_exit_is_an_error_with_a_trailing_line(ctx: ToolContext) -> None:
    text, is_error, code, _ = run(ctx, "echo partial; exit 2")
    assert (text, is_error, code) == ("partial\n[exit code 2]", True, 2)
    text, _, code, _ = run(ctx, "kill -SEGV $$")
    assert (text, code) == ("[exit code 139 (SIGSEGV)]", 139)


def test_no_output_and_no_stdin(ctx: ToolContext) -> None:
    assert run(ctx, "true")[0] == "(no output)"
    # stdin is /dev/null: a command that reads it gets EOF instead of hanging.
    text, is_error, _, _ = run(ctx, "cat; echo done", timeout_s=5)
    assert (text, is_error) == ("done\n", False)


def test_timeout_ends_the_command_and_its_background_children(either: ToolContext) -> None:
    text, is_error, _, _ = run(either, f"{sleep(1001)} & echo started; {sleep(1002)}", timeout_s=1)
    assert is_error
    assert text == f"started\n[timed out after 1s; {ENDED}]"
    assert wait_for(lambda: not running(*sleep_argv(1001)) and not running(*sleep_argv(1002)))


def test_timeout_escalates_to_sigkill_when_term_is_ignored(ctx: ToolContext) -> None:
    text, is_error, _, _ = run(ctx, "trap '' TERM; echo stubborn; while :; do sleep 0.1; done", timeout_s=0.5)
    assert is_error and text.endswith(f"[timed out after 0.5s; {ENDED}]")


def test_a_background_child_holding_the_pipe_does_not_hang(either: ToolContext) -> None:
    text, is_error, code, _ = run(either, f"({sleep(1003)} &); echo hi")
    assert (text, is_error, code) == (f"hi\n{LEFT}", False, 0)
    assert wait_for(lambda: not running(*sleep_argv(1003)))


@pytest.mark.parametrize("start", ["{} > /dev/null 2>&1 &", "setsid {} > /dev/null 2>&1 &", "setsid {} &"])
def test_background_jobs_end_with_the_command_even_in_a_new_session(either: ToolContext, start: str) -> None:
    """`setsid` leaves the process group: the sandbox's PID namespace, or the marker in the
    job's environment, still finds it; the result says what was ended."""
    text, is_error, code, _ = run(either, f"{start.format(sleep(1004))} echo ok")
    assert (text, is_error, code) == (f"ok\n{LEFT}", False, 0)
    assert wait_for(lambda: not running(*sleep_argv(1004)))


def test_output_is_capped_head_and_tail_with_bounded_memory(workspace: Path) -> None:
    ctx = ToolContext(workspace=workspace, output_cap_bytes=10_000)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    command = "echo FIRST; head -c 20000000 /dev/zero | tr '\\0' 'x'; echo; echo LAST"
    text, is_error, code, dropped = run(ctx, command)
    rss_growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    total = len("FIRST\n") + 20_000_000 + len("\nLAST\n")
    assert (is_error, code) == (False, 0)
    assert dropped == total - 10_000
    assert text.startswith("FIRST\nxxx")
    assert text.endswith("xxx\nLAST\n")
    assert "[… 20.0 MB of output dropped …]" in text
    assert len(text) < 11_000
    assert rss_growth_kb < 15_000  # 20 MB passed through; far less than that was ever held


def test_secrets_are_scrubbed_from_the_environment(either: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "ANTHROPIC_API_KEY": "sk-ant-very-secret", "ANTHROPIC_BASE_URL": "http://proxy.invalid",
        "GITHUB_TOKEN": "ghp_secret", "my_db_password": "hunter2", "Aws_Secret_Access": "aws-secret",
        # Missed by a rule of names holding KEY, TOKEN, SECRET or PASSWORD:
        "MYSQL_PWD": "mysql-pw-1", "PGPASS": "pg-pass-1", "GH_PAT": "gh-pat-1", "NPM_AUTH": "npm-auth-1",
        "SENTRY_DSN": "https://sentry-key-1@o1.ingest.invalid/5",
        # Secret by value: credentials inside a URL.
        "DATABASE_URL": "postgres://app:db-pw-1@db.invalid/prod", "HTTPS_PROXY": "http://u:proxy-pw-1@proxy:3128",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    monkeypatch.setenv("NO_PROXY_URL", "http://mirror.invalid:3128")  # a URL without credentials stays
    monkeypatch.setenv("PAGER", "less")
    text, _, _, _ = run(either, "env")
    names = {line.split("=", 1)[0] for line in text.splitlines() if "=" in line}
    assert not names & set(secrets)
    for value in secrets.values():
        assert value not in text
    assert {
        "HARMLESS_SETTING=visible",
        "NO_PROXY_URL=http://mirror.invalid:3128",
        "SCRIBE=1",
        "PAGER=cat",
        "GIT_PAGER=cat",
        "GIT_TERMINAL_PROMPT=0",
    } <= set(text.splitlines())
    assert {"PATH", "PWD", "HOME"} <= set(command_env())


def test_cancel_from_another_thread_ends_everything(either: ToolContext) -> None:
    tool = RunCommand()
    assert tool.cancel() is False  # nothing running: a no-op
    canceller = threading.Thread(target=lambda: wait_for(lambda: bool(running(*sleep_argv(1006)))) and tool.cancel())
    canceller.start()
    out = tool.run({"command": f"echo begun; setsid {sleep(1005)} & {sleep(1006)}"}, either)
    canceller.join()
    assert out.is_error
    assert out.text == f"begun\n[cancelled; {ENDED}]"
    assert wait_for(lambda: not running(*sleep_argv(1005)) and not running(*sleep_argv(1006)))
    # The next command on the same tool runs normally.
    assert tool.run({"command": "echo again"}, either).text == "again\n"


def test_undecodable_output_is_replaced(ctx: ToolContext) -> None:
    text, is_error, _, _ = run(ctx, "printf 'caf\\351\\n'")
    assert (text, is_error) == ("caf\ufffd\n", False)


def test_bad_timeouts_and_empty_command(ctx: ToolContext) -> None:
    assert run(ctx, "echo x", timeout_s=0)[0] == "timeout_s must be a positive number of seconds"
    assert run(ctx, "   ")[0] == "command is empty"
    assert (
        run(ctx, "echo x", timeout_s="5")[0]
        == "run_command: argument 'timeout_s' must be a number, not string"
    )


def test_capped_output_holds_about_the_cap_however_much_arrives() -> None:
    from scribe.tools.command import _CappedOutput

    output = _CappedOutput(1000)
    peak = 0
    for i in range(5000):
        output.add(bytes([48 + i % 10]) * 997)
        peak = max(peak, len(output.head) + output.tail_len)
    assert peak < 1000 + 2 * 997
    text, dropped = output.render()
    assert dropped == 5000 * 997 - 1000
    assert text.startswith("0" * 500 + "\n[… 5.0 MB of output dropped …]\n")
    assert text.endswith("9" * 500)


def test_the_output_tail_of_a_running_command_is_its_end_as_a_terminal_shows_it(ctx: ToolContext) -> None:
    """What a front end shows while a command runs: its last lines as they come, a progress bar
    as its last state, secret values redacted, and only the end kept however much it prints."""
    secret = "sk-live-0123456789abcdef"
    ctx.redact = Redactor.from_environ({"DEPLOY_TOKEN": secret})
    ctx.output_tail = OutputTail(ctx.redact)
    text, is_error, _, _ = run(ctx, f"seq 1 5000; printf 'step 1\\rstep 2\\rstep 3\\n'; echo token={secret}")
    assert not is_error
    shown = ctx.output_tail.lines(3)
    assert shown[:2] == ["5000", "step 3"] and secret not in shown[2] and shown[2].startswith("token=")
    assert len(ctx.output_tail.lines(100_000)) < 2_000  # the end only: about KEEP_BYTES of it
