"""Which scribe modules a prompt passes through on its way to the first request.

    python -m benchmarks.flow            # from the command line's start
    python -m benchmarks.flow --turn     # from `Agent.turn` only

Runs `scribe run hello` in process against the fake API in a temporary git workspace, with a
profiler hook that records every scribe function called from the start of the command (or of
`Agent.turn`) until the SDK's `messages.create`; prints how many functions in how many files,
the folders, how many times the path changes folder (two calls in a row in files of different
folders: what a reader following the path jumps across), call by call and file by file, both
between the folders of the layout (`agent/session`) and between its top-level folders alone (the
layers: `agent`, `workspace`), and the files in the order first met with their functions and
lines. Only scribe's own files count: a virtual environment inside the
checkout is not scribe's.
"""

from __future__ import annotations

import os
import shutil
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


def folder_of(name: str) -> str:
    """The folder of a file of scribe's, as the layout names it (`agent/session`, `cli/repl`)."""
    return name.rsplit("/", 1)[0] if "/" in name else "."


def importing(frame: FrameType | None) -> bool:
    """Whether this call runs as part of an import: what a module does when loaded is not the
    path a run takes (`python -X importtime` measures that)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="scribe-flow-"))
    home = root / "home"
    home.mkdir()
    server = FakeMessagesServer([Reply.text("hi")])
    os.environ.update(HOME=str(home), ANTHROPIC_BASE_URL=server.start(), ANTHROPIC_API_KEY="flow",
                      SCRIBE_WATCH_FILES="0")
    os.chdir(workspace(root))
    seen: dict[str, set[str]] = {}
    path: list[str] = []  # the folder of each scribe call, in order
    began, done = threading.Event(), threading.Event()
    if "--turn" not in sys.argv[1:]:
        began.set()

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
        elif (code.co_filename.startswith(PACKAGE) and code.co_name != "<module>" and "/fakeapi/" not in code.co_filename
              and "/site-packages/" not in code.co_filename and not importing(frame)):
            name = code.co_filename[len(PACKAGE):]
            seen.setdefault(name, set()).add(f"{code.co_name}:{code.co_firstlineno}")
            path.append(folder_of(name))

    from scribe.cli.app import app

    sys.setprofile(hook)
    threading.setprofile(hook)
    try:
        app(["run", "hello"], prog_name="scribe", standalone_mode=False)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
        server.stop()
        os.chdir(root.parent)
        shutil.rmtree(root)
    folders = sorted({folder_of(f) for f in seen})
    functions = sum(len(names) for names in seen.values())
    changes = sum(1 for a, b in zip(path, path[1:], strict=False) if a != b)
    first_met = [folder for n, folder in enumerate(folder_of(f) for f in seen)
                 if n == 0 or folder != folder_of(list(seen)[n - 1])]
    layers = [folder.split("/")[0] for folder in path]
    layer_changes = sum(1 for a, b in zip(layers, layers[1:], strict=False) if a != b)
    files = list(seen)
    layer_first = sum(1 for a, b in zip(files, files[1:], strict=False)
                      if folder_of(a).split("/")[0] != folder_of(b).split("/")[0])
    print(f"{functions} functions in {len(seen)} files in {len(folders)} folders ({', '.join(folders)}); "
          f"the path changes folder {changes} times call by call, {len(first_met) - 1} times file by file "
          f"in the order first met; between top-level folders {layer_changes} times call by call, "
          f"{layer_first} times file by file:", file=sys.stderr)
    for name, names in seen.items():
        lines = sum(1 for _ in (Path(PACKAGE) / name).open(encoding="utf-8"))
        print(f"  {name:<32} {len(names):>3} functions  {lines:>4} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
