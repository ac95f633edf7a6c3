"""`python -m benchmarks [costs|long-outputs|chain|llama|memory-paths|memory|overhead|startup|housekeeping|subagents|watcher|all]
[--before REV] [--docs]`
(or `python -m benchmarks deps`, below): run the
benchmarks, print a markdown report, and write it with the raw figures to benchmarks/results/
(latest.md, latest.json); `--docs` also puts it in docs/performance.md.

Everything runs locally against the project's fake Messages API; no key, no network. The cost
suite drives the `scribe` executable of this virtualenv and, on the tool-heavy shape, the same
repository at REV when `--before REV` is given (compared side by side; by default it is not),
installed once under the temporary folder. The long-output suite runs its chain through Claude
Code (when installed) and scribe, and through scribe at REV with `--before REV`. The sub-agent
suite gives one task that reads 30 files to `scribe run` with and without the `task` tool.

`python -m benchmarks deps` is no benchmark of scribe but of its dependencies, and never part of
`all`: the quick tests against the newest versions the project's ranges allow, and what differs
from constraints.txt (deps.py)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scribe import __version__

from . import (
    beside_claude,
    cost_report,
    deps,
    housekeeping,
    llama,
    memory_figures,
    memory_paths,
    overhead,
    startup,
    subagents,
    watcher,
)

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


def run_costs(before: str | None) -> tuple[dict[str, Any], str]:
    executable = cost_report.install_before(before) if before else None
    return cost_report.section(cost_report.measure(executable))


def run_long_outputs(before: str | None) -> tuple[dict[str, Any], str]:
    data = beside_claude.measure(before)
    return data, beside_claude.section(data)


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


def run_chain() -> tuple[dict[str, Any], str]:
    return cost_report.chain_vs_naive()


def run_llama() -> tuple[dict[str, Any], str]:
    data = llama.measure()
    text = llama.section(data)
    return data, text


def run_memory_paths() -> tuple[dict[str, Any], str]:
    data = memory_paths.measure()
    return data, memory_paths.section(data)


def run_startup() -> tuple[dict[str, Any], str]:
    data = startup.measure()
    return data, startup.section(data)


def run_housekeeping() -> tuple[dict[str, Any], str]:
    repl = housekeeping.measure()
    headless = housekeeping.measure_headless()
    return {"repl": repl, "headless": headless}, housekeeping.section(repl) + "\n\n" + \
        housekeeping.headless_section(headless)


def run_subagents() -> tuple[dict[str, Any], str]:
    data = subagents.measure()
    return data, subagents.section(data)


SUITES = {"chain": run_chain, "llama": run_llama, "memory-paths": run_memory_paths, "costs": run_costs,
          "long-outputs": run_long_outputs,
          "memory": run_memory, "overhead": run_overhead, "startup": run_startup, "housekeeping": run_housekeeping,
          "subagents": run_subagents, "watcher": run_watcher}
TAKE_BEFORE = ("costs", "long-outputs")
PAGE = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
BEGIN, END = "<!-- benchmarks:begin -->", "<!-- benchmarks:end -->"


def main() -> None:
    if sys.argv[1:2] == ["deps"]:
        raise SystemExit(deps.main(sys.argv[2:]))
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("suites", nargs="*", metavar="SUITE", help=f"{', '.join(SUITES)} or all (the default)")
    parser.add_argument("--before", default="none",
                        help="a revision to compare on the tool-heavy shape and the long-output chain (default: none)")
    parser.add_argument("--docs", action="store_true", help="write the report into docs/performance.md")
    args = parser.parse_args()
    before = None if args.before.lower() == "none" else args.before
    unknown = [s for s in args.suites if s not in (*SUITES, "all")]
    if unknown:
        parser.error(f"unknown suite {', '.join(unknown)}; choose from {', '.join(SUITES)}, all")
    chosen = list(SUITES) if not args.suites or "all" in args.suites else args.suites
    os.environ.setdefault("ANTHROPIC_API_KEY", "benchmark-no-key")
    started = time.monotonic()
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    data: dict[str, Any] = {"date": when, "machine": machine, "scribe": __version__}
    texts: dict[str, str] = {}
    for name in chosen:
        data[name], texts[name] = SUITES[name](before) if name in TAKE_BEFORE else SUITES[name]()
    command = " ".join(["python -m benchmarks", *(args.suites or ["all"]), *(["--before", before] if before else []),
                        *(["--docs"] if args.docs else [])])
    header = (f"Measured {when} on {machine}, scribe {__version__}, with `{command}` "
              f"({time.monotonic() - started:.0f} s; the machine's other work moves the timings).")
    report = header + "\n\n" + "\n\n".join(texts.values()) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.md").write_text(report, encoding="utf-8")
    (RESULTS / "latest.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.docs:
        write_page(header, texts)
    print(report)


def markers(suite: str | None = None) -> tuple[str, str]:
    """The comments around a block of docs/performance.md: the main one, or a suite's own."""
    if suite is None:
        return BEGIN, END
    return f"<!-- benchmarks:{suite}:begin -->", f"<!-- benchmarks:{suite}:end -->"


def write_page(header: str, texts: dict[str, str]) -> None:
    """Put each suite's report in docs/performance.md under `header`, in the suite's own block:
    running one suite leaves every other figure standing. A suite the page has no block for yet
    gets one at the end of the main block."""
    page = PAGE.read_text(encoding="utf-8")
    for name, text in texts.items():
        report = f"{header}\n\n{text}"
        if markers(name)[0] in page:
            page = _replace_block(page, markers(name), report)
        else:
            begin, end = markers(name)
            if END not in page:
                raise SystemExit(f"docs/performance.md has no {BEGIN} ... {END} block to add {name} to")
            page = page.replace(END, f"{begin}\n{report.strip()}\n{end}\n{END}", 1)
    PAGE.write_text(page, encoding="utf-8")


def _replace_block(page: str, block: tuple[str, str], report: str) -> str:
    begin, end = block
    if begin not in page or end not in page:
        raise SystemExit(f"docs/performance.md has no {begin} ... {end} block to replace")
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{report.strip()}\n{end}{tail}"


if __name__ == "__main__":
    main()
