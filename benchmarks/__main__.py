"""`python -m benchmarks [memory|strategies|overhead|all]`: run the benchmarks, print a markdown
report, and write it with the raw figures to benchmarks/results/ (latest.md, latest.json).

Everything runs locally against the project's fake Messages API; no key, no network."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scribe import __version__
from scribe.agent.config import Settings

from . import memory_figures, overhead, strategies, watcher
from .sessions import chatty, tool_heavy

RESULTS = Path(__file__).parent / "results"


def run_memory() -> tuple[dict[str, Any], str]:
    figures = memory_figures.measure()
    ok = memory_figures.verdicts(figures)
    f = figures
    rows = [
        ("observer / reflector calls", f"{f.calls['observer']} / {f.calls['reflector']}", ok["observer_and_reflector_ran"]),
        ("requests rejected by the API's checks", f"{f.rejected_requests} of {sum(f.calls.values())}", ok["every_request_valid"]),
        ("shared prefix read from cache (target ≥ 99%)", f"{f.prefix_read_share:.1%}", ok["prefix_read_share"]),
        ("agent input from cache, 2nd call on (≥ 85%)", f"{f.agent_read_share:.1%}", ok["agent_read_share"]),
        ("billed input vs naive agent (≤ 15%)", f"{f.billed_vs_naive:.1%}", ok["billed_vs_naive"]),
        ("largest prompt vs bound (tokens)", f"{f.largest_prompt:,} ≤ {f.prompt_bound:,}", ok["prompt_bounded"]),
        ("recall of a compressed detail, exact", f"`{f.recalled_line}`", ok["recall_exact"]),
    ]
    table = ["| figure | measured | holds |", "|---|---|---|"]
    table += [f"| {name} | {value} | {'yes' if holds else 'NO'} |" for name, value, holds in rows]
    text = (f"### Observational memory (tool-heavy session, {f.turns} turns, observe 6000 / reflect 4000)\n\n"
            + "\n".join(table))
    return figures.as_dict() | {"verdicts": ok}, text


def run_strategies() -> tuple[dict[str, Any], str]:
    data: dict[str, Any] = {}
    sections = []
    for session in (tool_heavy(30), chatty(40)):
        results = strategies.compare(session, Settings(permission_mode="full-auto"))
        data[session.name] = [r.as_dict() for r in results]
        table = ["| strategy | billed input vs full history, no cache | input $ (list prices) | cache-read share | "
                 "largest prompt | planted facts kept | requests rejected |", "|---|---|---|---|---|---|---|"]
        table += [f"| {r.strategy} | {r.relative_cost:.1%} | {r.input_usd:.2f} | {r.cache_read_share:.1%} | "
                  f"{r.largest_prompt:,} | {r.facts_kept}/{r.facts_total} | {r.rejected} |" for r in results]
        sections.append(f"### Memory strategies: {session.name} session ({len(session.turns)} turns)\n\n"
                        + "\n".join(table))
    return data, "\n\n".join(sections)


def run_overhead() -> tuple[dict[str, Any], str]:
    data = overhead.measure()
    table = ["| log events | log size | bookkeeping per call | render, no index | reopen (`--continue`) "
             "from the checkpoint | reopen with no checkpoint |", "|---|---|---|---|---|---|"]
    for size, row in data["sizes"].items():
        table.append(f"| {size:,} | {row['log_mb']} MB | {row['bookkeeping_ms']} ms | {row['render_ms']} ms | "
                     f"{row['continue_load_ms']} ms | {row['rebuild_ms']} ms |")
    run, listed = data["continue_run"], data["log_list"]
    text = ("### Harness overhead\n\n" + "\n".join(table) + "\n\n"
            f"`scribe run -c` on a {run['events']:,}-event log, the whole process: first request after "
            f"{run['first_request_s']} s, done after {run['total_s']} s, peak RSS {run['rss_mb']} MB (its first "
            f"run, which reads the log whole and writes the checkpoint: {run['first_run']['first_request_s']} s, "
            f"{run['first_run']['rss_mb']} MB). `scribe log list` over {listed['sessions']} sessions of "
            f"{listed['events']:,} events: {listed['list_s']} s ({listed['list_without_checkpoints_s']} s with no "
            "checkpoints).\n\n"
            f"Append one event: {data['append_us']} µs. `scribe --help`: {data['help_startup_ms']} ms "
            f"(importing the CLI: {data['import_cli_ms']} ms; the agent: {data['import_agent_ms']} ms; the SDK, "
            f"loaded at the first model call: {data['import_sdk_ms']} ms).")
    return data, text


def run_watcher() -> tuple[dict[str, Any], str]:
    data = watcher.measure()
    text = (f"### Workspace watcher ({data['files']:,} files in {data['folders']} folders, plus "
            f"{data['ignored_files']:,} git-ignored)\n\n"
            "| figure | value |\n|---|---|\n"
            f"| start | {data['start_ms']} ms |\n"
            f"| drain with nothing pending | {data['drain_idle_us']} µs |\n"
            f"| loop's added work per model call | {data['loop_added_per_call_us']} µs |\n"
            f"| idle CPU | {data['idle_cpu_ms_per_s']} ms per second |\n"
            f"| outside edit reported after (150 ms debounce included) | {data['edit_reported_after_ms']} ms |\n"
            f"| 1,000 outside edits at once | reported in {data['burst_1000_reported_after_ms']} ms as "
            f"{data['burst_1000_changes_reported']} events (40 listed, the rest counted) |\n"
            f"| auto-commit: `git status` at turn start / one commit | {data['auto_commit_status_ms']} ms / "
            f"{data['auto_commit_one_file_ms']} ms |")
    return data, text


SUITES = {"memory": run_memory, "strategies": run_strategies, "overhead": run_overhead, "watcher": run_watcher}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("suites", nargs="*", metavar="SUITE", help=f"{', '.join(SUITES)} or all (the default)")
    args = parser.parse_args()
    unknown = [s for s in args.suites if s not in (*SUITES, "all")]
    if unknown:
        parser.error(f"unknown suite {', '.join(unknown)}; choose from {', '.join(SUITES)}, all")
    chosen = list(SUITES) if not args.suites or "all" in args.suites else args.suites
    os.environ.setdefault("ANTHROPIC_API_KEY", "benchmark-no-key")
    started = time.monotonic()
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    data: dict[str, Any] = {"date": when, "machine": machine, "scribe": __version__}
    texts = []
    for name in chosen:
        data[name], text = SUITES[name]()
        texts.append(text)
    header = (f"Measured {when} on {machine}, scribe {__version__}, with `python -m benchmarks "
              f"{' '.join(args.suites) or 'all'}` ({time.monotonic() - started:.0f} s).")
    report = header + "\n\n" + "\n\n".join(texts) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.md").write_text(report, encoding="utf-8")
    (RESULTS / "latest.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
