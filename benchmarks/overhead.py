"""What the harness itself costs: appending to the log, the bookkeeping before each model call
(render, token estimates, threshold and payback checks), reopening a long session, and start-up."""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scribe.agent.compress import Compressor
from scribe.agent.config import Settings
from scribe.agent.session import Session, open_session
from scribe.memory.events import (
    AssistantEvent,
    ObservationEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.memory.log import LogWriter
from scribe.memory.render import render
from scribe.memory.store import SessionFile
from scribe.memory.tokens import TokenEstimator
from scribe.tools.registry import builtin_tools, tool_definitions

RAW_TAIL_EVENTS = 60  # what compression leaves raw in a long session (about a turn or two)


def synthetic_log(path: Path, events: int) -> None:
    """A long session as compression leaves it: observations cover all but the newest events."""
    with LogWriter.create(path) as log:
        log.append(SessionEvent, id=path.stem, created="2026-01-01T00:00:00Z", cwd="/w", model="m",
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
        for size in sizes:
            path = Path(tmp) / f"s{size}.jsonl"
            synthetic_log(path, size)
            session = open_session(SessionFile(path.stem, path, None, None))
            session.close()  # its events stay in memory; the lock is not needed to read them
            events = session.events
            memory = Compressor(model=None, settings=Settings(), estimator=TokenEstimator(12_000))  # type: ignore[arg-type]

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
                "continue_load_ms": round(timed(lambda path=path: _reopen(path), 3) * 1000, 1),
            }
        results["append_us"] = round(_append_latency(Path(tmp) / "append.jsonl") * 1e6, 1)
    results["help_startup_ms"] = round(timed(lambda: _run([sys.executable, "-m", "scribe", "--help"]), 5) * 1000, 1)
    results["import_cli_ms"] = round(timed(lambda: _run([sys.executable, "-c", "import scribe.cli.app"]), 5) * 1000, 1)
    results["import_agent_ms"] = round(timed(lambda: _run([sys.executable, "-c", "import scribe.agent.loop"]), 3) * 1000, 1)
    # The SDK is imported on the first model call (the REPL starts it while the person types).
    results["import_sdk_ms"] = round(timed(lambda: _run([sys.executable, "-c", "import anthropic"]), 3) * 1000, 1)
    return results


def _reopen(path: Path) -> None:
    session = open_session(SessionFile(path.stem, path, None, None))
    session.close()


def _append_latency(path: Path) -> float:
    with LogWriter.create(path) as log:
        log.append(UserEvent, text="warm up")
        start = time.perf_counter()
        for i in range(2_000):
            log.append(UserEvent, text=f"message {i} " * 10)
        return (time.perf_counter() - start) / 2_000


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True)
