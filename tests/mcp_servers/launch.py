"""Starting the notes server for a test: its path, and the server over streamable HTTP on
127.0.0.1 as its own process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NOTES = str(Path(__file__).parent / "notes.py")
# Generous: several test runs share two cores here, and each server imports the SDK.
START_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def notes_over_http() -> Iterator[str]:
    """The notes server's URL, once it accepts connections; the process is ended afterwards."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, NOTES, "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and proc.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        assert proc.poll() is None, f"the HTTP server exited ({proc.returncode})"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def notes_table(name: str = "notes", **env: str) -> str:
    pairs = ", ".join(f'{k} = "{v}"' for k, v in env.items())
    return (f'[mcp.servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{NOTES}"]\n'
            + (f"env = {{ {pairs} }}\n" if pairs else ""))
