"""run_command with real bash: exit codes, timeouts that reach background children, bounded
output, a scrubbed environment and cancellation from another thread."""

from __future__ import annotations

import os
import resource
import threading
import time
from pathlib import Path

import pytest

from scribe.tools.base import ToolContext
from scribe.tools.command import RunCommand, command_env
from scribe.tools.registry import builtin_tools, run_tool


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace, command_timeout_s=30)


def run(ctx: ToolContext, command: str, **extra: object) -> tuple[str, bool, int | None, int]:
    out = run_tool(builtin_tools(), "run_command", {"command": command, **extra}, ctx)
    return out.text, out.is_error, out.exit_code, out.dropped_bytes


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


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


def test_timeout_kills_the_whole_group_including_background_children(
    ctx: ToolContext, tmp_path: Path
) -> None:
    pidfile = tmp_path / "bg.pid"
    start = time.monotonic()
    text, is_error, _, _ = run(
        ctx, f"sleep 1000 & echo $! > {pidfile}; echo started; sleep 1000", timeout_s=1
    )
    elapsed = time.monotonic() - start
    assert elapsed < 10
    assert is_error
    assert text == "started\n[timed out after 1s; process group killed]"
    background = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while alive(background) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(background)


def test_timeout_escalates_to_sigkill_when_term_is_ignored(ctx: ToolContext) -> None:
    start = time.monotonic()
    text, is_error, _, _ = run(ctx, "trap '' TERM; echo stubborn; while :; do sleep 0.1; done", timeout_s=0.5)
    assert time.monotonic() - start < 10
    assert is_error and text.endswith("[timed out after 0.5s; process group killed]")


def test_a_background_child_holding_the_pipe_does_not_hang(ctx: ToolContext) -> None:
    start = time.monotonic()
    text, is_error, code, _ = run(ctx, "(sleep 1000 &); echo hi")
    assert time.monotonic() - start < 5
    assert text.startswith("hi\n") and "background jobs" in text
    assert (is_error, code) == (False, 0)


def test_a_background_job_with_redirected_output_is_left_running(ctx: ToolContext, tmp_path: Path) -> None:
    pidfile = tmp_path / "server.pid"
    text, is_error, _, _ = run(ctx, f"sleep 30 > /dev/null 2>&1 & echo $! > {pidfile}; echo ok")
    pid = int(pidfile.read_text())
    try:
        assert (text, is_error) == ("ok\n", False)
        assert alive(pid)
    finally:
        os.kill(pid, 9)


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


def test_secrets_are_scrubbed_from_the_environment(ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.invalid")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("my_db_password", "hunter2")
    monkeypatch.setenv("Aws_Secret_Access", "aws-secret")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    monkeypatch.setenv("PAGER", "less")
    text, _, _, _ = run(ctx, "env")
    for secret in ("sk-ant-very-secret", "proxy.invalid", "ghp_secret", "hunter2", "aws-secret"):
        assert secret not in text
    lines = set(text.splitlines())
    assert {
        "HARMLESS_SETTING=visible",
        "SCRIBE=1",
        "PAGER=cat",
        "GIT_PAGER=cat",
        "GIT_TERMINAL_PROMPT=0",
    } <= lines
    assert "PATH" in command_env()


def test_cancel_from_another_thread_kills_the_group(ctx: ToolContext) -> None:
    tool = RunCommand()
    assert tool.cancel() is False  # nothing running: a no-op
    timer = threading.Timer(0.5, tool.cancel)
    start = time.monotonic()
    timer.start()
    out = tool.run({"command": "echo begun; sleep 1000 & sleep 1000"}, ctx)
    timer.join()
    assert time.monotonic() - start < 10
    assert out.is_error
    assert out.text == "begun\n[cancelled; process group killed]"
    # The next command on the same tool runs normally.
    assert tool.run({"command": "echo again"}, ctx).text == "again\n"


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
