"""The sandbox scribe's git calls go to: it stays, but each call runs as in a sandbox of its own
(its environment, its folder), and nothing a call started outlives it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import running, sleep_argv, wait_for
from scribe.workspace.git.server import GitServer
from scribe.workspace.sandbox.bwrap import ReadOnly, find_bwrap, probe

BWRAP = find_bwrap()
needs_bwrap = pytest.mark.skipif(BWRAP is None or probe(BWRAP, os.geteuid() == 0).problem is not None,
                                 reason="bubblewrap cannot create namespaces here")


@pytest.fixture
def server() -> GitServer:
    assert BWRAP is not None
    made = GitServer(ReadOnly(BWRAP, os.geteuid() == 0), False)
    yield made
    made.close()


@needs_bwrap
def test_each_call_gets_its_own_environment_and_folder(server: GitServer, tmp_path: Path) -> None:
    path = os.environ["PATH"]
    first = server.run(["sh", "-c", "echo $ONE-$TWO; pwd"], tmp_path, {"PATH": path, "ONE": "1"}, 10)
    second = server.run(["sh", "-c", "echo $ONE-$TWO; pwd"], Path("/"), {"PATH": path, "TWO": "2"}, 10)
    assert first == (0, f"1-\n{tmp_path}\n".encode(), b"")
    assert second == (0, b"-2\n/\n", b"")
    assert server.run_many([["true"], ["false"], ["sh", "-c", "echo never"]], tmp_path, {"PATH": path}, 10,
                           stop=True) == [(0, b"", b""), (1, b"", b"")]


@needs_bwrap
def test_nothing_a_call_started_outlives_it(server: GitServer, tmp_path: Path) -> None:
    sleeper = sleep_argv(300)
    done = server.run(["sh", "-c", f"setsid {' '.join(sleeper)} & echo started"], tmp_path,
                      {"PATH": os.environ["PATH"]}, 10)
    assert done[:2] == (0, b"started\n")
    assert running(*sleeper) == []  # ended before the answer came
    assert server.run(["echo", "again"], tmp_path, {"PATH": os.environ["PATH"]}, 10)[1] == b"again\n"


@needs_bwrap
def test_a_call_past_its_timeout_ends_the_sandbox_and_the_next_starts_another(server: GitServer,
                                                                             tmp_path: Path) -> None:
    sleeper = sleep_argv(300)
    with pytest.raises(subprocess.TimeoutExpired):
        server.run(list(sleeper), tmp_path, {"PATH": os.environ["PATH"]}, 0.5)
    # bubblewrap is gone; the kernel ends what was in its namespace right after it
    assert wait_for(lambda: running(*sleeper) == [])
    assert server.run(["echo", "fresh"], tmp_path, {"PATH": os.environ["PATH"]}, 10)[1] == b"fresh\n"


@needs_bwrap
def test_output_is_never_read_through_a_link(server: GitServer, tmp_path: Path) -> None:
    """A program in the sandbox that swaps its output file for a link to a secret gets nothing
    read through it."""
    secret = tmp_path / "secret"
    secret.write_text("the person's\n")
    swap = f'for f in "{server.exchange}"/*.out; do rm -f "$f"; ln -s {secret} "$f"; done'
    status, out, _ = server.run(["sh", "-c", swap], tmp_path, {"PATH": os.environ["PATH"]}, 10)
    assert status == 0 and out == b""
