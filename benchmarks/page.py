"""The session page on a long session: `python -m benchmarks.page [--events N]`.

Builds a session of about N events (default 10,000) through the real loop, tools, log and SDK
against the fake API (observations and reflections included, default thresholds), then measures
through the real executable how long `scribe log html` takes and what the page weighs, and in
headless Chromium how long the page takes to open from file:// and how soon `scribe log serve`
shows an appended event. Prints one small report; not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scribe.fakeapi import Reply, text_block, tool_use_block
from scribe.log.events import UserEvent
from scribe.log.jsonl import LogWriter, encode, read_log
from scribe.settings.values import Settings

from .replay import replay
from .sessions import ScriptedSession, Turn

SCRIBE = str(Path(sys.executable).parent / "scribe")
EVENTS_PER_TURN = 9  # user, then three calls (assistant + usage each) and two tool results
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def long_session(events: int) -> ScriptedSession:
    turns = []
    for k in range(max(1, events // EVENTS_PER_TURN)):
        command = f"for i in $(seq 1 60); do echo \"step {k} row $i value $((i * {k + 3}))\"; done"
        turns.append(Turn(f"Step {k}: print the table for step {k} and check notes.txt.", [
            Reply([text_block(f"Printing step {k}."), tool_use_block("run_command", {"command": command})]),
            Reply([tool_use_block("read_file", {"path": "notes.txt"})] if k else
                  [tool_use_block("write_file", {"path": "notes.txt", "content": "# notes\n" * 20})]),
            Reply([text_block(f"Step **{k}**: 60 rows, values are multiples of {k + 3}.\n\n- done\n- next: {k + 1}")]),
        ]))
    return ScriptedSession("page", turns)


def build_log(events: int, path: Path) -> float:
    started = time.perf_counter()
    run = replay(long_session(events), Settings(permission_mode="full-auto"))
    with path.open("wb") as fh:
        for event in run.events:
            fh.write(encode(event))
    return time.perf_counter() - started


def browser_open(page: Path, runs: int = 3) -> list[float]:
    """Seconds from navigation to the load event (script run, first call shown), in Chromium."""
    from playwright.sync_api import sync_playwright

    figures = []
    with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium",
                                                       headless=True, args=CHROMIUM_ARGS)
        for _ in range(runs):
            tab = context.new_page()
            tab.goto(page.as_uri(), wait_until="load")
            tab.wait_for_selector("#call-title")
            timing = tab.evaluate("() => { const t = performance.getEntriesByType('navigation')[0];"
                                  " return [t.domContentLoadedEventEnd, t.loadEventEnd]; }")
            figures.append(max(timing) / 1000)
            tab.close()
        context.close()
    return figures


def serve_latency(log: Path, session_id: str, runs: int = 3) -> list[float]:
    """Seconds from appending a user event to its text being on the open page."""
    from playwright.sync_api import sync_playwright

    proc = subprocess.Popen([SCRIBE, "log", "serve", str(log)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ")[1].split()[0]
        figures = []
        with sync_playwright() as p, tempfile.TemporaryDirectory() as profile:
            context = p.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium",
                                                           headless=True, args=CHROMIUM_ARGS)
            tab = context.new_page()
            tab.goto(url, wait_until="load")
            for n in range(runs):
                marker = f"appended-{n}-{time.time_ns()}"
                read = read_log(log)
                with LogWriter.resume(log, read) as writer:
                    started = time.perf_counter()
                    writer.append(UserEvent, text=marker)
                tab.locator(".ev.user .plain", has_text=marker).wait_for(state="attached", timeout=60_000)
                figures.append(time.perf_counter() - started)
            context.close()
        return figures
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.page")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--log", type=Path, help="use this log instead of building one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="scribe-page-") as tmp:
        log = Path(tmp) / "page-bench.jsonl"  # a copy: measuring `serve` appends to it
        if args.log is not None:
            log.write_bytes(args.log.read_bytes())
        else:
            print(f"building a session of about {args.events:,} events ...", flush=True)
            print(f"  built in {build_log(args.events, log):.1f} s", flush=True)
        events = read_log(log).events
        page = Path(tmp) / "page.html"
        times = []
        for _ in range(3):
            started = time.perf_counter()
            subprocess.run([SCRIBE, "log", "html", str(log), "-o", str(page)], check=True, capture_output=True)
            times.append(time.perf_counter() - started)
        weight = page.stat().st_size
        opened = browser_open(page)
        followed = serve_latency(log, log.stem)
        report = {
            "events": len(events), "log_bytes": log.stat().st_size, "page_bytes": weight,
            "scribe_log_html_s": [round(t, 3) for t in times], "browser_open_s": [round(t, 3) for t in opened],
            "serve_new_event_s": [round(t, 3) for t in followed],
        }
        print(json.dumps(report, indent=1))
        print(f"{len(events):,} events, log {log.stat().st_size / 1e6:.2f} MB -> page {weight / 1e6:.2f} MB; "
              f"`scribe log html` median {statistics.median(times):.2f} s; opens in Chromium in "
              f"{statistics.median(opened):.2f} s (median of {len(opened)}); serve shows an appended event after "
              f"{statistics.median(followed):.2f} s (median of {len(followed)})")
        if os.environ.get("SCRIBE_PAGE_KEEP"):
            kept = Path(os.environ["SCRIBE_PAGE_KEEP"])
            kept.write_bytes(log.read_bytes())
            print(f"log kept at {kept}")


if __name__ == "__main__":
    main()
