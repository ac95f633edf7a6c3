"""`scribe demo` runs offline through the whole stack and reports real figures."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

from helpers import SCRIBE, events_of, run_scribe


def test_demo_runs_without_key_or_network(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    ran = run_scribe(["demo", "--keep"], tmp_path, env)
    assert ran.code == 0, ran.err
    assert "SCRIPTED" in ran.out
    log = Path(re.search(r"log:\s+(\S+)", ran.out).group(1))  # type: ignore[union-attr]
    workspace = log.parents[2]
    assert "Good to see you" in (workspace / "greet.py").read_text()
    assert "requests:  8 (0 rejected" in ran.out
    hit = int(re.search(r"cache:\s+(\d+)%", ran.out).group(1))  # type: ignore[union-attr]
    assert hit >= 80
    events = events_of(log)
    assert [e.seq for e in events] == list(range(len(events)))


def test_demo_shows_what_the_tools_did_and_leaves_no_folder_behind(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(temporary), "NO_COLOR": "1"}
    ran = run_scribe(["demo"], tmp_path, env)
    assert ran.code == 0, ran.err
    assert "│ Hello, Ada\n" in ran.out and "│ Hello, Ada! Good to see you." in ran.out  # the command's output
    assert '-    return f"Hello, {name}"' in ran.out  # the edit's diff
    assert '+    return f"Hello, {name}! Good to see you."' in ran.out
    assert "created greet.py: wrote 2 lines" in ran.out
    assert list(temporary.iterdir()) == []
    assert "`scribe demo --keep` keeps it" in ran.out


def test_demo_interrupted_leaves_no_folder_behind(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(temporary), "NO_COLOR": "1"}
    proc = subprocess.Popen([SCRIBE, "demo"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("> Create greet.py"):  # its first turn is under way
            break
    assert list(temporary.iterdir()), "the demo works in a temporary folder"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "scribe demo: interrupted" in out and "Traceback" not in err
    assert list(temporary.iterdir()) == []
