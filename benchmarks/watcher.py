"""What watching the workspace costs, on a repository of 10,000 files in nested folders:
starting the watcher, the work it adds to each model call of the turn loop (a drain with
nothing pending, the window around a command), its threads' CPU while nothing happens, how
soon an outside edit is reported, a burst of 1,000 outside edits, and, for auto_commit, the
per-turn git status and one commit.

`measure() -> dict` returns the figures (times in milliseconds unless the name says us).
Run alone: `python -m benchmarks.watcher`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scribe.workspace.git.repository import commit_paths, dirty_paths, query_in
from scribe.workspace.watcher.watcher import WorkspaceWatcher

FILES = 10_000
TOP, SUB, LEAF = 20, 10, 50  # 20 x 10 folders x 50 files = 10,000
IGNORED_FILES = 5_000  # in .venv/, ignored by .gitignore: should cost nothing


def make_repository(root: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    git("init", "-q", "--initial-branch=main")
    git("config", "user.name", "bench")
    git("config", "user.email", "bench@example.invalid")
    git("config", "commit.gpgsign", "false")
    for t in range(TOP):
        for s in range(SUB):
            folder = root / f"pkg{t:02}" / f"mod{s:02}"
            folder.mkdir(parents=True)
            for f in range(LEAF):
                (folder / f"file{f:02}.py").write_text(f"# {t}/{s}/{f}\nVALUE = {f}\n")
    venv = root / ".venv" / "lib"
    for i in range(IGNORED_FILES):
        sub = venv / f"p{i // 100:02}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{i:04}.py").write_text("x = 1\n")
    (root / ".gitignore").write_text(".venv/\n__pycache__/\n")
    git("add", "-A")
    git("commit", "-q", "-m", "10,000 files")


def per_call_us(fn: Callable[[], Any], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def wait_for(watcher: WorkspaceWatcher, count: int, timeout: float = 30.0) -> tuple[float, int]:
    """Seconds until `count` changes have been drained (polling every 5 ms), and how many came."""
    start = time.perf_counter()
    got = 0
    while got < count and time.perf_counter() - start < timeout:
        got += len(watcher.drain({}))
        time.sleep(0.005)
    return time.perf_counter() - start, got


def measure(idle_s: float = 3.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="scribe-bench-watch-") as tmp:
        root = Path(tmp).resolve()
        make_repository(root)
        figures: dict[str, Any] = {"files": FILES, "ignored_files": IGNORED_FILES,
                                   "folders": TOP * SUB + TOP}

        starts = []
        for _ in range(3):
            watcher = WorkspaceWatcher(root, exclude=[root / ".scribe"], git=query_in(root))
            began = time.perf_counter()
            problem = watcher.start()
            starts.append(time.perf_counter() - began)
            assert problem is None, problem
            watcher.stop()
        figures["start_ms"] = round(statistics.median(starts) * 1000, 1)

        watcher = WorkspaceWatcher(root, exclude=[root / ".scribe"], git=query_in(root))
        watcher.start()
        try:
            figures["watched_top_folders"] = len(watcher._watches)
            seen = {f"pkg00/mod00/file{f:02}.py": "x" for f in range(LEAF)}
            figures["drain_idle_us"] = round(per_call_us(lambda: watcher.drain(seen), 100_000), 3)

            def loop_work() -> None:  # what the loop adds per model call with one command
                watcher.drain(seen)
                with watcher.command_running():
                    pass

            figures["loop_added_per_call_us"] = round(per_call_us(loop_work, 100_000), 3)

            cpu, wall = time.process_time(), time.perf_counter()
            time.sleep(idle_s)
            used = time.process_time() - cpu
            figures["idle_cpu_ms_per_s"] = round(used / (time.perf_counter() - wall) * 1000, 3)

            target = root / "pkg07" / "mod03" / "file11.py"
            began = time.perf_counter()
            target.write_text("# edited outside\n")
            elapsed, got = wait_for(watcher, 1)
            figures["edit_reported_after_ms"] = round(elapsed * 1000, 1)  # includes the 150 ms debounce

            burst = [root / f"pkg{t:02}" / "mod05" / f"file{f:02}.py" for t in range(TOP) for f in range(LEAF)]
            began = time.perf_counter()
            for path in burst:
                path.write_text("# burst\n")
            elapsed, got = wait_for(watcher, 41)  # 40 listed + one "many"
            figures["burst_1000_reported_after_ms"] = round((time.perf_counter() - began) * 1000, 1)
            figures["burst_1000_changes_reported"] = got
        finally:
            watcher.stop()

        figures["auto_commit_status_ms"] = round(per_call_us(lambda: dirty_paths(root), 5) / 1000, 1)
        (root / "pkg01" / "new.py").write_text("NEW = 1\n")
        began = time.perf_counter()
        commit_paths(root, ["pkg01/new.py"], "scribe: bench\n\nScribe-Session: bench\n")
        figures["auto_commit_one_file_ms"] = round((time.perf_counter() - began) * 1000, 1)
        return figures


if __name__ == "__main__":
    print(json.dumps(measure(), indent=2))
