"""Every signal that ends scribe ends its commands: the real executable, real signals, a real
command with a background job in a session of its own (`setsid`), in the sandbox and without.

SIGTERM and SIGHUP take Ctrl-C's path: the command's partial output becomes its result, an
`interrupt` event is logged, one line says so, and the exit code is 128 + the signal. After a
SIGKILL nothing of scribe's runs on: the sandbox dies with its parent, and without one the
reaper ends what carries the command's marker."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pexpect
import pytest

from helpers import SCRIBE, events_of, run_scribe, running, scribe_env, session_logs, sleep_argv, wait_for
from scribe.fakeapi import FakeMessagesServer, Fault, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, InterruptEvent, ToolResultEvent
from scribe.workspace.git.folders import command_protection

SANDBOXED = command_protection(Path("/")).sandboxed
ENDED = "the command and the processes it started were ended"


def job(tag: int) -> tuple[str, tuple[str, str], tuple[str, str]]:
    """A command that prints, leaves a `setsid` job behind and waits; the sleeps are ours to find."""
    background, foreground = sleep_argv(2000 + 10 * tag + 1), sleep_argv(2000 + 10 * tag + 2)
    return f"echo begun; setsid {' '.join(background)} & {' '.join(foreground)}", background, foreground


def script(command: str) -> list[Reply]:
    return [Reply([text_block("Starting."), tool_use_block("run_command", {"command": command})]),
            Reply([text_block("not reached")])]


def protection_env(sandbox: bool) -> dict[str, str]:
    if sandbox and not SANDBOXED:
        pytest.skip("bubblewrap cannot create namespaces here")
    return {} if sandbox else {"SCRIBE_SANDBOX": "false"}


def start_run(server: FakeMessagesServer, workspace: Path, home: Path, extra: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([SCRIBE, "run", "-p", "full-auto", "start the job"], cwd=workspace,
                            env=scribe_env(server.base_url, home, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def all_gone(*commands: tuple[str, str]) -> bool:
    return wait_for(lambda: not any(running(*c) for c in commands))


def test_a_run_stopped_before_its_prompt_was_recorded_says_so(workspace: Path, home: Path) -> None:
    """SIGTERM while a user_prompt_submit hook still runs (the message is recorded after it):
    nothing of the prompt is in any log, and the closing line says so instead of offering to
    continue."""
    started = workspace / "hook-started"
    config = home / ".config" / "scribe" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[[hooks.user_prompt_submit]]\ncommand = "touch hook-started; sleep 60"\n')
    with FakeMessagesServer([Reply.text("never")]) as server:
        env = scribe_env(server.base_url, home)
        proc = subprocess.Popen([SCRIBE, "run", "the prompt that was never sent"], cwd=workspace, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert wait_for(started.exists, 30), proc.stderr
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        assert server.requests == []
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err.splitlines()[-1] == ("scribe: stopped by SIGTERM before the prompt was recorded; nothing was sent: "
                                    "run it again")
    texts = [getattr(e, "text", "") for log in session_logs(workspace) for e in events_of(log)]
    assert "the prompt that was never sent" not in texts


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "sandbox"), [(signal.SIGTERM, True), (signal.SIGHUP, True), (signal.SIGTERM, False)],
                         ids=["TERM-sandbox", "HUP-sandbox", "TERM-no-sandbox"])
def test_a_signal_ends_the_running_command_records_it_and_says_so(
        workspace: Path, home: Path, sig: signal.Signals, sandbox: bool) -> None:
    command, background, foreground = job(sig.value)
    with FakeMessagesServer(script(command)) as server:
        proc = start_run(server, workspace, home, protection_env(sandbox))
        try:
            assert wait_for(lambda: bool(running(*background) and running(*foreground))), proc.stderr
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 128 + sig.value, err
    [log] = session_logs(workspace)
    assert err.splitlines()[-1] == (f"scribe: stopped by {sig.name}; what it was running was ended and recorded "
                                    f"in session {log.stem}; `scribe run -c` continues it")
    assert out == "Starting.\n"
    assert all_gone(background, foreground)
    *_, result, interrupt = events_of(log)
    assert isinstance(result, ToolResultEvent) and result.is_error
    assert result.output == f"begun\n[cancelled (stopped by {sig.name}); {ENDED}]"
    assert isinstance(interrupt, InterruptEvent) and interrupt.reason == f"stopped by {sig.name}"


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
def test_after_a_sigkill_of_scribe_nothing_it_started_runs_on(workspace: Path, home: Path, sandbox: bool) -> None:
    command, background, foreground = job(90 if sandbox else 80)
    with FakeMessagesServer(script(command)) as server:
        proc = start_run(server, workspace, home, protection_env(sandbox))
        try:
            assert wait_for(lambda: bool(running(*background) and running(*foreground)))
            proc.kill()
            proc.wait(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert all_gone(background, foreground)
    [log] = session_logs(workspace)
    log.parent.joinpath(".corrupt-on-purpose").touch()  # a killed writer may leave its call open


@pytest.mark.slow
def test_the_repl_ends_on_sigterm_mid_turn_and_on_sighup_at_the_prompt(workspace: Path, home: Path) -> None:
    command, background, foreground = job(70)
    replies = [*script(command), Reply.text("hello again")]
    with FakeMessagesServer(replies) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        child = pexpect.spawn(SCRIBE, ["-p", "full-auto"], cwd=str(workspace), env=env, dimensions=(40, 120),
                              encoding="utf-8", timeout=30)
        try:
            child.expect("›")
            child.send("start the job\r")
            assert wait_for(lambda: bool(running(*background) and running(*foreground)))
            child.kill(signal.SIGTERM)
            child.expect("stopped by SIGTERM; what it was running was ended and recorded; `scribe -c` continues")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 143 or child.signalstatus is None and child.status == 143 << 8, child.before
        assert all_gone(background, foreground)
        [log] = session_logs(workspace)
        *_, result, interrupt = events_of(log)
        assert isinstance(result, ToolResultEvent) and result.output.endswith(f"(stopped by SIGTERM); {ENDED}]")
        assert isinstance(interrupt, InterruptEvent) and interrupt.reason == "stopped by SIGTERM"

        again = pexpect.spawn(SCRIBE, ["-c"], cwd=str(workspace), env=env, dimensions=(40, 120),
                              encoding="utf-8", timeout=30)
        try:
            again.expect("continuing session")
            again.expect("›")
            again.kill(signal.SIGHUP)  # the terminal went away while scribe waited for a line
            again.expect(pexpect.EOF)
        finally:
            again.close()
        assert again.exitstatus == 129, again.before


@pytest.mark.slow
def test_a_run_cancelled_by_ctrl_c_is_told_to_the_model_when_the_session_continues(
        workspace: Path, home: Path) -> None:
    """Ctrl-C (SIGINT) ends `scribe run` while the model is asked; `scribe run -c` then sends the
    next request as a message of its own, after a marker that closes the cancelled one."""
    def model(request: dict) -> Fault | Reply:  # type: ignore[type-arg]
        if request["messages"][-1]["content"][-1].get("text") == "delete all the tests now":
            return Fault(kind="hang")
        return Reply.text("Here are the tests.")

    with FakeMessagesServer(model) as server:
        env = scribe_env(server.base_url, home)
        proc = subprocess.Popen([SCRIBE, "run", "delete all the tests now"], cwd=workspace, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert wait_for(lambda: len(server.requests) == 1), proc.stderr
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        again = run_scribe(["run", "-c", "actually, just list the tests"], workspace, env)
        sent = server.requests[-1].json
    assert proc.returncode == 130, err
    assert again.code == 0 and again.out.strip() == "Here are the tests.", again.err
    [log] = session_logs(workspace)
    answer = [e for e in events_of(log) if isinstance(e, AssistantEvent)][-1]
    request = run_scribe(["log", "prompt", "--at", str(answer.seq)], workspace, env).json()
    assert request == sent  # what the model was sent, rebuilt from the log
    assert [(m["role"], [b["text"] for b in m["content"]]) for m in request["messages"]] == [
        ("user", ["delete all the tests now"]),
        ("assistant", ["[The person cancelled this request before it finished; no tool had run. "
                       "It stays cancelled unless the person asks for it again.]"]),
        ("user", ["actually, just list the tests"])]
