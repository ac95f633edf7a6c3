"""Which scribe modules a prompt passes through on its way to the first request.

    python -m benchmarks.flow

Runs `scribe run hello` in process against the fake API in a temporary git workspace, with a
profiler hook that records the file of every scribe function called from `Agent.turn` until the
SDK's `messages.create`; prints the count, the folders and the files in the order first met.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import scribe
from scribe.fakeapi import FakeMessagesServer, Reply

PACKAGE = str(Path(scribe.__file__).parent) + "/"


def workspace(root: Path) -> Path:
    path = root / "workspace"
    path.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@example.invalid"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=path, check=True)
    return path


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="scribe-flow-"))
    home = root / "home"
    home.mkdir()
    server = FakeMessagesServer([Reply.text("hi")])
    os.environ.update(HOME=str(home), ANTHROPIC_BASE_URL=server.start(), ANTHROPIC_API_KEY="flow",
                      SCRIBE_WATCH_FILES="0")
    os.chdir(workspace(root))
    seen: dict[str, None] = {}
    began, done = threading.Event(), threading.Event()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or done.is_set():
            return
        code = frame.f_code
        if code.co_filename == PACKAGE + "agent/loop.py" and code.co_name == "turn":
            began.set()
        if not began.is_set():
            return
        if code.co_name == "create" and "anthropic/resources/messages" in code.co_filename:
            done.set()
        elif code.co_filename.startswith(PACKAGE) and code.co_name != "<module>" and "/fakeapi/" not in code.co_filename:
            seen.setdefault(code.co_filename[len(PACKAGE):], None)

    from scribe.cli.app import app

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        app(["run", "hello"], prog_name="scribe", standalone_mode=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        server.stop()
    folders = sorted({f.split("/")[0] for f in seen})
    print(f"{len(seen)} files in {len(folders)} folders ({', '.join(folders)}):", file=sys.stderr)
    for name in seen:
        print(f"  {name}", file=sys.stderr)


if __name__ == "__main__":
    main()
