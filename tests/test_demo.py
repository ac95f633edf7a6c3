"""`scribe demo` runs offline through the whole stack and reports real figures."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import events_of, run_scribe


def test_demo_runs_without_key_or_network(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    ran = run_scribe(["demo"], tmp_path, env)
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
