"""`scribe run` is one process: it leaves nothing running that serves later runs, so a command in
the sandbox finds no socket of scribe's to talk to, and every run works under the limits of the
shell that started it. Real processes (the subject is the process), real bubblewrap."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import SCRIBE, events_of, left_running, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import ToolResultEvent
from scribe.workspace.git.folders import command_protection

SANDBOXED = command_protection(Path("/")).sandboxed

# Run in the sandbox by the model: every Unix socket the sandbox can see (by /proc/net/unix and
# by walking the folders a server would use), connected to; a line per socket that answered.
PROBE = r"""
import os, socket
seen = set()
for line in open('/proc/net/unix').read().splitlines()[1:]:
    parts = line.split()
    if len(parts) >= 8 and parts[7].startswith('/'):
        seen.add(parts[7])
for top in [os.environ.get('XDG_RUNTIME_DIR') or '/run/user', '/tmp', '/run', os.path.expanduser('~')]:
    for folder, dirs, files in os.walk(top):
        for name in files + dirs:
            seen.add(os.path.join(folder, name))
for path in sorted(seen):
    try:
        import stat
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1)
        s.connect(path)
        print('CONNECTED-' + 'TO ' + path)
        s.close()
    except OSError:
        pass
print('probe done')
"""


def run(workspace: Path, env: dict[str, str], *args: str, shell_prefix: str = "") -> subprocess.CompletedProcess[str]:
    """`scribe run ARGS` as a shell starts it, after `shell_prefix` (the shell's own limits)."""
    command = " ".join(["exec", shlex.quote(SCRIBE), "run", *map(shlex.quote, args)])
    return subprocess.run(["bash", "-c", f"{shell_prefix}{command}"], cwd=workspace, env=env, capture_output=True,
                          text=True, timeout=120)


def test_no_process_of_scribe_outlives_a_run(workspace: Path, home: Path, tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    with FakeMessagesServer([Reply.text("one"), Reply.text("two")]) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(runtime))
        for prompt in ("first", "second"):
            done = run(workspace, env, prompt)
            assert done.returncode == 0, done.stderr
            time.sleep(1.0)
            assert left_running(str(tmp_path)) == []
    assert list(runtime.iterdir()) == []  # no socket, lock or log of a server either


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A runtime folder outside /tmp, as $XDG_RUNTIME_DIR is (/run/user/UID): the sandbox's private
    /tmp would hide a socket under the test's own tmp_path, and the test would prove nothing."""
    path = Path(tempfile.mkdtemp(prefix="scribe-runtime-", dir="/var/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(not SANDBOXED, reason="bubblewrap cannot create namespaces here")
def test_a_sandboxed_command_finds_no_socket_of_scribe(workspace: Path, home: Path, runtime_dir: Path) -> None:
    runtime = runtime_dir
    (workspace / "probe.py").write_text(PROBE)
    script = [Reply.text("warmed"),
              Reply([tool_use_block("run_command", {"command": "python3 probe.py"})]), Reply.text("probed")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home, XDG_RUNTIME_DIR=str(runtime))
        assert run(workspace, env, "hello").returncode == 0
        time.sleep(1.5)  # anything the first run left to serve later runs is up by now
        done = run(workspace, env, "-p", "full-auto", "probe")
    assert done.returncode == 0, done.stderr
    results = [e for e in events_of(session_logs(workspace)[-1]) if isinstance(e, ToolResultEvent)]
    assert "probe done" in results[0].output
    assert "CONNECTED-TO" not in results[0].output


def test_the_agents_commands_run_under_the_limits_of_the_shell_that_started_scribe(
        workspace: Path, home: Path) -> None:
    script = [Reply.text("warmed"),
              Reply([tool_use_block("run_command", {"command": "echo nofile=$(ulimit -n) nice=$(nice)"})]),
              Reply.text("limits read")]
    with FakeMessagesServer(script) as server:
        env = scribe_env(server.base_url, home)
        assert run(workspace, env, "hello").returncode == 0
        time.sleep(1.5)
        done = run(workspace, env, "-p", "full-auto", "read the limits", shell_prefix="ulimit -n 300; renice -n 7 $$ >/dev/null; ")
    assert done.returncode == 0, done.stderr
    results = [e for e in events_of(session_logs(workspace)[-1]) if isinstance(e, ToolResultEvent)]
    assert "nofile=300 nice=7" in results[0].output
