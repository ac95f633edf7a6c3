"""What `scribe run` does as it starts, read from the process that ran it: which modules it
loaded, and what it did with the garbage collector around the SDK's import (cli/preload.py).
Each runs in a process of its own: the modules a process holds and its collector are the
subject."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from scribe.fakeapi import FakeMessagesServer, Reply
from tests.helpers import scribe_env

# `scribe run hello` in this process, through the typer app as the executable runs it; then, once
# the SDK's import thread has ended, what the process holds, as JSON on stderr.
_RUN = """
import gc, json, sys, threading
from scribe.cli.app import app
collecting = sys.argv[1] == "on"
if not collecting:
    gc.disable()
code = app(["run", "hello"], prog_name="scribe", standalone_mode=False)
for thread in threading.enumerate():
    if thread.name == "scribe-sdk-import":
        thread.join()
print(json.dumps({"code": code, "collecting": gc.isenabled(), "frozen": gc.get_freeze_count(),
                  "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _run_hello(workspace: Path, home: Path, collector: str = "on") -> dict[str, Any]:
    with FakeMessagesServer([Reply.text("Hello!")]) as server:
        ran = subprocess.run([sys.executable, "-c", _RUN, collector], cwd=workspace,
                             env=scribe_env(server.base_url, home), capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout.strip() == "Hello!", ran.stdout + ran.stderr
    found: dict[str, Any] = json.loads(ran.stderr.strip().splitlines()[-1])
    return found


def test_a_run_freezes_what_its_start_made_and_collects_again_after(workspace: Path, home: Path) -> None:
    """The SDK's import is done with the collector paused; then what start-up made is frozen out
    of later collections, and collecting goes on for what the turn makes."""
    found = _run_hello(workspace, home)
    assert found["code"] in (0, None) and "anthropic" in found["modules"]
    assert found["collecting"] is True
    # the SDK's types alone are many thousands of objects
    assert found["frozen"] > 50_000


def test_a_collector_turned_off_before_the_run_stays_off_and_nothing_is_frozen(workspace: Path, home: Path) -> None:
    found = _run_hello(workspace, home, collector="off")
    assert found["collecting"] is False and found["frozen"] == 0


def test_a_run_loads_no_terminal_drawing_and_no_pattern_engine_it_does_not_use(workspace: Path, home: Path) -> None:
    """`scribe run` prints plain text: rich and prompt-toolkit are the REPL's and `scribe log`'s;
    the bounded pattern engine is loaded by the first search, and this turn searches nothing."""
    found = _run_hello(workspace, home)
    loaded = {name.split(".")[0] for name in found["modules"]}
    assert loaded & {"rich", "prompt_toolkit", "regex", "markdown_it"} == set()
