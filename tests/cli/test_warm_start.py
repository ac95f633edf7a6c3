"""Warm start (cli/warm/): a `scribe run` handed to this user's warm server behaves as the
executable running it itself would: output, exit codes, standard input, the environment, the
log; signals reach the run, and a SIGKILL of the executable ends it. The processes are the
subject here, so every run is the real executable, each test with a runtime folder (and so a
server) of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import SCRIBE, events_of, running, scribe_env, session_logs, sleep_argv, wait_for
from scribe.cli.warm.server import stop_servers
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import UserEvent


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Path]:
    """A runtime folder of this test's (XDG_RUNTIME_DIR); its warm server is stopped after."""
    folder = tmp_path / "runtime"
    folder.mkdir(mode=0o700)
    yield folder
    stop_servers(folder / "scribe")


def server_log(runtime: Path) -> str:
    return "".join(p.read_text() for p in (runtime / "scribe").glob("*.log"))


def served(runtime: Path) -> int:
    """How many runs the warm server has taken."""
    return server_log(runtime).count(" scribe run: child ")


def run(args: list[str], workspace: Path, env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIBE, *args], cwd=workspace, env=env, input=stdin, capture_output=True, text=True,
                          timeout=60)


def warm(workspace: Path, env: dict[str, str], runtime: Path) -> None:
    """A first run, in its own process, leaves a server up for the next."""
    first = run(["run", "hello"], workspace, env)
    assert first.returncode == 0, first.stderr
    assert served(runtime) == 0
    assert wait_for(lambda: any((runtime / "scribe").glob("*.sock")), 120), (
        server_log(runtime), sorted(p.name for p in (runtime / "scribe").iterdir()))


def test_a_run_handed_to_the_warm_server_answers_as_the_executable_does(
        workspace: Path, home: Path, runtime: Path) -> None:
    with FakeMessagesServer(lambda request: Reply.text("echo: " + str(request["messages"][-1]["content"][-1]
                                                                      ["text"]))) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(runtime), SCRIBE_MODEL="claude-opus-5")
        warm(workspace, env, runtime)
        again = run(["run", "-c", "-o", "json", "-"], workspace, env, stdin="from standard input")
        usage = run(["run", "-p", "ask", "x"], workspace, env)
    assert served(runtime) == 2
    assert again.returncode == 0, again.stderr
    assert '"result": "echo: from standard input"' in again.stdout
    assert usage.returncode == 2 and usage.stderr.startswith("scribe: permission mode 'ask' needs a person")
    [log] = session_logs(workspace)
    events = events_of(log)
    assert [e.text for e in events if isinstance(e, UserEvent)] == ["hello", "from standard input"]
    assert events[0].model == "claude-opus-5"  # type: ignore[attr-defined] # the environment of the run
    assert server.requests[-1].json["model"] == "claude-opus-5"


def test_the_server_holds_no_secret_and_each_run_its_own(workspace: Path, home: Path, runtime: Path) -> None:
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(runtime))
        warm(workspace, env, runtime)
        [lock] = (runtime / "scribe").glob("*.lock")
        environ = Path(f"/proc/{lock.read_text().strip()}/environ").read_bytes()
        assert b"ANTHROPIC_API_KEY" not in environ and b"sk-test-secret-key" not in environ
        other = run(["run", "hello"], workspace, {**env, "ANTHROPIC_API_KEY": "sk-another-key"})
    assert other.returncode == 0 and served(runtime) == 1
    assert "sk-another-key" in str(server.requests[-1].headers)  # the key this run was given


def test_signals_reach_the_run_and_a_sigkill_of_the_executable_ends_it(
        workspace: Path, home: Path, runtime: Path) -> None:
    foreground = sleep_argv(3001)
    command = " ".join(foreground)

    def answer(request: dict) -> Reply:  # type: ignore[type-arg]
        last = request["messages"][-1]["content"][-1]
        if last.get("type") == "text" and last["text"] in ("go", "again"):
            return Reply([text_block("Starting."), tool_use_block("run_command", {"command": command})])
        return Reply.text("ok")

    with FakeMessagesServer(answer) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(runtime), SCRIBE_SANDBOX="false")
        warm(workspace, env, runtime)
        proc = subprocess.Popen([SCRIBE, "run", "-p", "full-auto", "go"], cwd=workspace, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert wait_for(lambda: bool(running(*foreground)), 30)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert "stopped by SIGTERM; what it was running was ended and recorded" in err
        assert wait_for(lambda: not running(*foreground))

        killed = subprocess.Popen([SCRIBE, "run", "-c", "-p", "full-auto", "again"], cwd=workspace, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert wait_for(lambda: bool(running(*foreground)), 30)
        killed.kill()
        killed.wait(timeout=30)
        assert wait_for(lambda: not running(*foreground)), "the run outlived its executable"
        # the session is free again: nothing of the killed run holds its lock
        after = run(["run", "-c", "done"], workspace, env)
    assert after.returncode == 0, after.stderr
    assert served(runtime) == 3


def test_a_changed_installation_is_not_served(workspace: Path, home: Path, runtime: Path, tmp_path: Path) -> None:
    """A server whose modules changed on disk takes no more runs: the next runs in its own process
    and a fresh server takes over."""
    import scribe.cli.warm.wire as wire

    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(runtime))
        warm(workspace, env, runtime)
        module = Path(wire.__file__)
        stamp = module.stat()
        os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000_000))
        try:
            changed = run(["run", "hello"], workspace, env)
            assert changed.returncode == 0, changed.stderr
            assert "the installation changed: leaving" in server_log(runtime) and served(runtime) == 0
            assert wait_for(lambda: any((runtime / "scribe").glob("*.sock")), 60)
            time.sleep(0.2)
            assert run(["run", "hello"], workspace, env).returncode == 0
        finally:
            os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert served(runtime) == 1


def test_a_runtime_folder_open_to_others_is_not_used(workspace: Path, home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    (folder / "scribe").mkdir(parents=True)
    (folder / "scribe").chmod(0o777)
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(folder))
        for _ in range(2):
            ran = run(["run", "hello"], workspace, env)
            assert ran.returncode == 0 and ran.stdout == "ok\n", ran.stderr
    assert not list((folder / "scribe").iterdir())
