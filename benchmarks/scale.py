"""`python -m benchmarks.scale [--root DIR] [--size BYTES] [--sessions N] [COMMAND ...]`: the log
commands on a session log of about a gigabyte and on ten thousand small sessions, each timed as
a whole process: wall seconds, seconds to its first byte of output, CPU seconds and peak memory
(the kernel's own accounting of the finished child, from wait4). The logs are written under
DIR (default /tmp/scribe-scale) by benchmarks/scale_logs.py, once; nothing is committed.

Every figure is one run, on whatever else the machine is doing: CPU seconds say more than wall
seconds on a busy machine. The report is printed as markdown and written to DIR/scale.json."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .scale_logs import many_sessions, write_session

SCRIBE = str(Path(sys.executable).parent / "scribe")
BIG_ID = "20260105-090000-b16b16"

# (name, workspace: big|many, argv after `scribe`, remove the index first); "{outside}" in argv is
# the big log linked from outside its sessions folder: `log stats` of it reads the log whole.
COMMANDS: list[tuple[str, str, list[str], bool]] = [
    ("help", "many", ["--help"], False),
    ("list, 10,000 sessions, index built", "many", ["log", "list"], True),
    ("list, 10,000 sessions", "many", ["log", "list"], False),
    ("list --all, 10,000 sessions", "many", ["log", "list", "--all"], False),
    ("stats --by day, 10,000 sessions", "many", ["log", "stats", "--by", "day"], False),
    ("list, 1 GB log, index built", "big", ["log", "list"], True),
    ("list, 1 GB log", "big", ["log", "list"], False),
    ("stats --by day, 1 GB log", "big", ["log", "stats", "--by", "day"], False),
    ("stats --by model, 1 GB log", "big", ["log", "stats", "--by", "model"], False),
    ("search --words (one hit), 1 GB log", "big", ["log", "search", "--words", "token345678"], False),
    ("search --words (5,800 hits), 1 GB log", "big", ["log", "search", "--words", "part 17 failed"], False),
    ("tail -n 3, 1 GB log", "big", ["log", "tail", "-n", "3"], False),
    ("stats, 1 GB log", "big", ["log", "stats"], False),
    ("stats, 1 GB log, read whole", "big", ["log", "stats", "{outside}"], False),
    ("stats --json, 1 GB log", "big", ["log", "stats", "--json"], False),
    ("verify, 1 GB log", "big", ["log", "verify"], False),
    ("search (regex), 1 GB log", "big", ["log", "search", r"token34567\b"], False),
    ("show -t user, 1 GB log", "big", ["log", "show", "-t", "user"], False),
    ("html, 1 GB log", "big", ["log", "html", "-o", "-"], False),
]

# (name, argv after `scribe`, remove what is derived from the log first); each appends to the log
RUNS: list[tuple[str, list[str], bool]] = [
    ("run -c, 1 GB log (first, no checkpoint or index)", ["run", "-c", "say ok"], True),
    ("run -c, 1 GB log", ["run", "-c", "say ok"], False),
    ("run -s, 1 GB log", ["run", "-s", BIG_ID, "say ok"], False),
    ("new run beside a 1 GB log", ["run", "say ok"], False),
]


def build(root: Path, size: int, sessions: int) -> dict[str, Path]:
    """The two workspaces (git repositories with their logs), written if missing, and the big
    log's second name outside its workspace."""
    big, many = root / "big", root / "many"
    log = big / ".scribe" / "sessions" / f"{BIG_ID}.jsonl"
    if not log.exists():
        log.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(big)], check=True)
        write_session(log, str(big), size=size)
    folder = many / ".scribe" / "sessions"
    if not folder.is_dir() or len(list(folder.glob("*.jsonl"))) < sessions:
        subprocess.run(["git", "init", "-q", str(many)], check=True)
        many_sessions(folder, str(many), sessions)
    outside = root / "outside" / log.name
    if not outside.exists():
        outside.parent.mkdir(exist_ok=True)
        os.link(log, outside)  # the same file, not under a sessions folder
    return {"big": big, "many": many, "outside": outside}


def sealed(log: Path) -> None:
    """A log written here, not by a scribe session, sealed as the person's (`scribe log adopt`): a
    run continues only a log whose seal holds (log/seal.py). Done once; the runs keep it sealed."""
    from scribe.log.jsonl import adopt_log
    from scribe.log.seal import authenticate_file

    if not authenticate_file(log).ok:
        adopt_log(log)


def measure(argv: list[str], cwd: Path, timeout: float) -> dict[str, Any]:
    """One whole run: wall and first-output seconds, CPU seconds, peak RSS in MB, exit status."""
    # As an installed scribe runs: its bytecode kept, and its output buffered (unbuffered, each
    # piece of a long output is a write of its own: `log stats --json` of the big log spent 52 s
    # of system time so).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SCRIBE_") and k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    env["NO_COLOR"] = "1"
    started = time.perf_counter()
    proc = subprocess.Popen([SCRIBE, *argv], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    assert proc.stdout is not None
    first = proc.stdout.read(1)
    first_at = time.perf_counter() - started if first else None
    size = len(first)
    while chunk := proc.stdout.read(1 << 20):
        size += len(chunk)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"argv": argv, "wall_s": round(wall, 3), "first_output_s": round(first_at, 3) if first_at else None,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 3), "peak_mb": round(usage.ru_maxrss / 1024, 1),
            "exit": proc.returncode, "output_bytes": size, "killed_after_s": timeout if proc.returncode == -9 else None}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("names", nargs="*", help="only the commands whose name contains one of these")
    parser.add_argument("--root", type=Path, default=Path("/tmp/scribe-scale"))
    parser.add_argument("--size", type=int, default=1_000_000_000, help="bytes of the big log")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one command may take")
    parser.add_argument("--runs", action="store_true",
                        help="also `scribe run -c`, `-s` and a new run (NAMES pick among them too)")
    parser.add_argument("--results", type=Path, help="where the figures are kept (default ROOT/scale.json)")
    args = parser.parse_args()
    workspaces = build(args.root, args.size, args.sessions)
    results_path = args.results or args.root / "scale.json"
    results: dict[str, Any] = json.loads(results_path.read_text()) if results_path.exists() else {}
    exact = {n for n in args.names if n in {c[0] for c in COMMANDS}}
    for name, where, argv, fresh in COMMANDS:
        # a name given whole picks that command only; a part of one, every command holding it
        if args.names and name not in exact and not any(n in name for n in set(args.names) - exact):
            continue
        cwd = workspaces[where]
        if fresh:
            for path in (cwd / ".scribe").glob("index.sqlite3*"):
                path.unlink()
        results[name] = measure([a.replace("{outside}", str(workspaces["outside"])) for a in argv], cwd,
                                args.timeout)
        print(json.dumps({name: results[name]}), flush=True)
        results_path.write_text(json.dumps(results, indent=2))
    if args.runs:
        results.update(measure_runs(args.root, args.timeout, args.names))
        results_path.write_text(json.dumps(results, indent=2))
    print(report(results))


def report(results: dict[str, Any]) -> str:
    rows = ["| command | wall s | first output s | CPU s | peak MB |", "|---|---|---|---|---|"]
    for name, r in results.items():
        killed = f" (stopped after {r['killed_after_s']:g} s)" if r.get("killed_after_s") else ""
        rows.append(f"| `scribe {' '.join(r['argv'])}` ({name}){killed} | {r['wall_s']} | "
                    f"{r['first_output_s'] if r['first_output_s'] is not None else '-'} | {r['cpu_s']} | "
                    f"{r['peak_mb']} |")
    return "\n".join(rows)


def measure_runs(root: Path, timeout: float, names: list[str]) -> dict[str, Any]:
    """`scribe run -c`, `run -s` and a new `run` in a copy of the big workspace (each appends to
    or adds a log), against the fake API answering every call with one short text."""
    import shutil

    from scribe.fakeapi import FakeMessagesServer, Reply

    source = root / "big"
    copy = root / "big-runs"
    if not (copy / ".scribe" / "sessions" / f"{BIG_ID}.jsonl").exists():
        shutil.rmtree(copy, ignore_errors=True)
        (copy / ".scribe" / "sessions").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(copy)], check=True)
        # the copy's log names its own workspace, as a session started there would
        # Streamed, not read whole: a gigabyte held here would be counted in every child's peak
        # (the child's resident set right after fork is this process's).
        log = copy / ".scribe" / "sessions" / f"{BIG_ID}.jsonl"
        with (source / ".scribe" / "sessions" / f"{BIG_ID}.jsonl").open("rb") as src, log.open("wb") as dst:
            dst.write(src.readline().replace(f'"cwd":"{source}"'.encode(), f'"cwd":"{copy}"'.encode()))
            shutil.copyfileobj(src, dst, 1 << 20)
    sealed(copy / ".scribe" / "sessions" / f"{BIG_ID}.jsonl")
    out: dict[str, Any] = {}
    with FakeMessagesServer(lambda request: Reply.text("ok")) as server:
        os.environ.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="sk-bench")
        for name, argv, fresh in RUNS:
            if names and not any(n in name for n in names):
                continue
            if fresh:  # what is derived from the log: the checkpoint, the index
                for path in [*(copy / ".scribe").glob("index.sqlite3*"),
                             *(copy / ".scribe" / "sessions").glob("*.checkpoint")]:
                    path.unlink()
            out[name] = measure(argv, copy, timeout)
            print(json.dumps({name: out[name]}), flush=True)
    return out


if __name__ == "__main__":
    main()
