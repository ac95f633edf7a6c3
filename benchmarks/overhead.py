"""What the harness itself costs: appending to the log, the bookkeeping before each model call
(render, token estimates, threshold and payback checks), reopening a long session (in process,
and `scribe run -c` as a whole), listing sessions, and start-up."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scribe.agent.compression.compressor import Compressor
from scribe.agent.session.session import Session
from scribe.agent.session.start import open_session
from scribe.context.checkpoint import checkpoint_path
from scribe.context.preview import OutputView
from scribe.context.render import render
from scribe.context.tokens import TokenEstimator
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import (
    AssistantEvent,
    ObservationEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import LogWriter
from scribe.log.store import SessionFile, SessionStore
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions

RAW_TAIL_EVENTS = 60  # what compression leaves raw in a long session (about a turn or two)


def synthetic_log(path: Path, events: int, cwd: str = "/w") -> None:
    """A long session as compression leaves it: observations cover all but the newest events."""
    with LogWriter.create(path) as log:
        log.append(SessionEvent, id=path.stem, created="2026-01-01T00:00:00Z", cwd=cwd, model="m",
                   scribe_version="bench", system="You are scribe." * 50, tools=tool_definitions(builtin_tools()),
                   prompt_hash="0", config=Settings().recorded())
        n = 0
        while log.next_seq < events:
            n += 1
            if log.next_seq < events - RAW_TAIL_EVENTS and n % 40 == 0:
                log.append(ObservationEvent, text="🔴 the user wants X\n🟡 ran tests: 3 failed" * 5,
                           seq_from=max(1, log.next_seq - 40), seq_to=log.next_seq - 1, tokens=60, model="h")
                continue
            log.append(UserEvent, text=f"step {n}: please run the tests")
            log.append(AssistantEvent, content=[{"type": "tool_use", "id": f"t{n}", "name": "run_command",
                                                 "input": {"command": "pytest -q"}}], stop_reason="tool_use")
            log.append(UsageEvent, purpose="agent", model="m", input=10, cache_read=1000, cache_write=50, output=20)
            log.append(ToolResultEvent, tool_use_id=f"t{n}", tool="run_command", output="ok\n" * 200)
        # Ends at a turn start, where a call's bookkeeping does the most: the payback check too.
        log.append(UserEvent, text="next step: please run the tests")


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of `repeat` runs."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(sizes: tuple[int, ...] = (1_000, 10_000, 100_000)) -> dict[str, Any]:
    results: dict[str, Any] = {"sizes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        # The whole-process figures first, while this process is small: a child's peak RSS counts
        # the pages it shared with its parent before it ran scribe.
        results["continue_run"] = _continue_run(Path(tmp) / "run", max(sizes))
        results["log_list"] = _log_list(Path(tmp) / "list", sessions=50, events=1_000)
        for size in sizes:
            path = Path(tmp) / f"s{size}.jsonl"
            synthetic_log(path, size)
            session = open_session(SessionFile(path.stem, path, None, None))
            session.close()  # its events stay readable; the lock is not needed to read them
            events = list(session.events)
            memory = Compressor(model=None, settings=Settings(), estimator=TokenEstimator(OutputView(Settings().preview_chars)))  # type: ignore[arg-type]

            def bookkeeping(session: Session = session, memory: Compressor = memory) -> None:
                """Per call: context size, threshold and payback checks, render, estimate for calibration."""
                size_now = memory.context(session)
                _ = size_now.raw > memory.settings.observe_tokens or memory.paid_off_span(session)
                render(session.events, session.chunks)
                memory.request_estimate(session)

            results["sizes"][size] = {
                "log_mb": round(path.stat().st_size / 1e6, 2),
                "bookkeeping_ms": round(timed(bookkeeping, 20) * 1000, 3),
                "render_ms": round(timed(lambda events=events: render(events), 20) * 1000, 3),
                # From the checkpoint the first reopen wrote, and with no checkpoint (a log an
                # older scribe wrote, or one whose checkpoint no longer fits): read whole.
                "continue_load_ms": round(timed(lambda path=path: _reopen(path), 3) * 1000, 1),
                "rebuild_ms": round(timed(lambda path=path: _reopen(path, rebuild=True), 3) * 1000, 1),
            }
        results["append_us"] = round(_append_latency(Path(tmp) / "append.jsonl") * 1e6, 1)
    results["help_startup_ms"] = round(timed(lambda: _run([sys.executable, "-m", "scribe", "--help"]), 5) * 1000, 1)
    results["import_cli_ms"] = round(timed(lambda: _run([sys.executable, "-c", "import scribe.cli.app"]), 5) * 1000, 1)
    results["import_agent_ms"] = round(timed(lambda: _run([sys.executable, "-c", "import scribe.agent.loop"]), 3) * 1000, 1)
    # The SDK is imported on the first model call (the REPL starts it while the person types).
    results["import_sdk_ms"] = round(timed(lambda: _run([sys.executable, "-c", "import anthropic"]), 3) * 1000, 1)
    return results


def _reopen(path: Path, *, rebuild: bool = False) -> None:
    if rebuild:
        checkpoint_path(path).unlink(missing_ok=True)
    session = open_session(SessionFile(path.stem, path, None, None))
    session.close()


def _workspace(root: Path) -> Path:
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


# The kernel starts a child's peak RSS at its parent's: fork (or vfork) and exec fold the
# parent's high-water mark into the child's, so scribe started from this process (a gigabyte
# after the cost suite) would report a gigabyte. A small launcher starts it instead and reports
# when it did (perf_counter is the system-wide monotonic clock) and the peak the kernel saw.
_LAUNCHER = ("import os, subprocess, sys, time\n"
             "started = time.perf_counter()\n"
             "child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
             "_, status, usage = os.wait4(child.pid, 0)\n"
             "print(started, os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")


def _continue_run(root: Path, events: int) -> dict[str, Any]:
    """`scribe run -c` on a long log, the executable people run, against the fake API: seconds from
    the process's start to its first request, to its end, and its peak RSS; the first run writes the
    checkpoint, the others start from it. The SDK's own import is timed beside it."""
    workspace = _workspace(root)
    store = SessionStore(workspace / ".scribe")
    synthetic_log(store.path_for(store.new_id()), events, cwd=str(workspace))
    arrivals: list[float] = []

    def answer(request: dict[str, Any]) -> Reply:
        arrivals.append(time.perf_counter())
        return Reply.text("ok")

    runs: list[tuple[float, float, float]] = []
    with FakeMessagesServer(answer) as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "benchmark-no-key",
               "SCRIBE_WATCH_FILES": "0"}
        scribe = str(Path(sys.executable).parent / "scribe")
        for i in range(4):
            del arrivals[:]
            launched = subprocess.run([sys.executable, "-c", _LAUNCHER, scribe, "run", "-c", f"step {i}"],
                                      cwd=workspace, env=env, capture_output=True, text=True, check=True)
            ended = time.perf_counter()
            started, code, peak_kb = launched.stdout.split()
            assert int(code) == 0 and arrivals, "scribe run -c failed"
            runs.append((arrivals[0] - float(started), ended - float(started), int(peak_kb) / 1024))
    later = runs[1:]
    return {"events": events, "first_run": {"first_request_s": round(runs[0][0], 3), "rss_mb": round(runs[0][2], 1)},
            "first_request_s": round(statistics.median(r[0] for r in later), 3),
            "total_s": round(statistics.median(r[1] for r in later), 3),
            "rss_mb": round(max(r[2] for r in later), 1)}


def _log_list(root: Path, *, sessions: int, events: int) -> dict[str, Any]:
    """`scribe log list` over many sessions: each closed once by scribe (so it has its checkpoint),
    then with every checkpoint gone (sessions an older scribe wrote)."""
    workspace = _workspace(root)
    store = SessionStore(workspace / ".scribe")
    paths = []
    for _ in range(sessions):
        path = store.path_for(store.new_id())
        synthetic_log(path, events, cwd=str(workspace))
        _reopen(path)
        paths.append(path)
    argv = [str(Path(sys.executable).parent / "scribe"), "log", "list"]
    checkpointed = timed(lambda: _run(argv, cwd=workspace), 5)
    for path in paths:
        checkpoint_path(path).unlink()
    without = timed(lambda: _run(argv, cwd=workspace), 3)
    return {"sessions": sessions, "events": events, "list_s": round(checkpointed, 3),
            "list_without_checkpoints_s": round(without, 3)}


def _append_latency(path: Path) -> float:
    with LogWriter.create(path) as log:
        log.append(UserEvent, text="warm up")
        start = time.perf_counter()
        for i in range(2_000):
            log.append(UserEvent, text=f"message {i} " * 10)
        return (time.perf_counter() - start) / 2_000


def _run(argv: list[str], cwd: Path | None = None) -> None:
    subprocess.run(argv, check=True, capture_output=True, cwd=cwd)
