"""What a `scribe run` spends in git: every git process scribe starts (sandboxed or not: the
bubblewrap around it counts), from its start to its end, in real `scribe run`, `scribe diff` and
`scribe undo` processes on a fresh repository, against the fake API.

`python -m benchmarks.git_calls [--before DIR] [--runs N]`: DIR holds an earlier version's
`scribe` package (`mkdir -p DIR/scribe && git archive REV | tar -x -C DIR/scribe`), run by the same
interpreter; the two are measured in turn, run after run, so that a busy machine slows both
alike. A git call is a git process (or bubblewrap around one, or the bash that runs several in
one sandbox), GitPython's `cat-file --batch` readers among them (they end with the call that
opened them), or a request to the long-lived git sandbox an earlier version kept
(workspace/gitserver.py), timed from its start to its answer. Such a long-lived sandbox is
counted apart and not timed: it lives as long as the process, and its requests are what is timed.

Shapes: a read-only turn (list_files; the watcher starts), an auto-commit turn (write_file), then
`scribe diff` and `scribe undo` of it."""

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
from typing import Any

from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block

# Imported by every scribe process the benchmark starts (PYTHONPATH): times each git process,
# and each request to an earlier version's long-lived git sandbox (workspace/gitserver.py).
_HOOK = '''
import atexit, importlib.abc, importlib.util, json, os, subprocess, sys, time
_out = os.environ.get("SCRIBE_BENCH_GIT_TIMES")
if _out:
    _records = []
    _init, _done = subprocess.Popen.__init__, subprocess.Popen._handle_exitstatus
    def _is_git(argv):
        return any(os.path.basename(str(a)) in ("git", "bwrap") for a in argv[:1]) or "scribe-git" in argv
    def _long_lived(argv):
        return "scribe-git-sandbox" in argv
    def init(self, args, *a, **k):
        self._bench = (time.perf_counter(), [str(x) for x in ([args] if isinstance(args, (str, bytes)) else args)])
        _init(self, args, *a, **k)
    def done(self, *a, **k):
        _done(self, *a, **k)
        start, argv = getattr(self, "_bench", (None, []))
        if start is not None and _is_git(argv):
            _records.append({"s": time.perf_counter() - start, "batch": _long_lived(argv)})
    subprocess.Popen.__init__, subprocess.Popen._handle_exitstatus = init, done

    class _TimeRequests(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "scribe.workspace.gitserver":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            run_module = spec.loader.exec_module
            def exec_module(module):
                run_module(module)
                run = module.GitServer.run_many  # what run() calls too
                def timed(self, *a, **k):
                    start = time.perf_counter()
                    try:
                        return run(self, *a, **k)
                    finally:
                        _records.append({"s": time.perf_counter() - start, "batch": False, "request": True})
                module.GitServer.run_many = timed
            spec.loader.exec_module = exec_module
            return spec
    sys.meta_path.insert(0, _TimeRequests())
    @atexit.register
    def _write():
        with open(_out, "a") as f:
            f.write(json.dumps(_records) + "\\n")
'''
SHAPES = ("read-only turn", "auto-commit turn", "scribe diff", "scribe undo")


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _repository(root: Path) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q", "--initial-branch=main")
    for key, value in (("user.name", "Bench"), ("user.email", "bench@example.invalid"), ("commit.gpgsign", "false")):
        _git(root, "config", key, value)
    for i in range(50):
        (root / f"src{i % 5}").mkdir(exist_ok=True)
        (root / f"src{i % 5}" / f"m{i}.py").write_text(f"x = {i}\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "start")
    return root


def _scribe(args: list[str], cwd: Path, env: dict[str, str], times: Path) -> tuple[float, list[dict[str, Any]]]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "scribe", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"scribe {' '.join(args)} failed: {done.stderr.strip()[-400:]}")
    lines = times.read_text().splitlines() if times.exists() else []
    times.unlink(missing_ok=True)
    return wall, json.loads(lines[-1]) if lines else []


def _one(tree: Path | None, root: Path, hook: Path) -> dict[str, tuple[float, list[dict[str, Any]]]]:
    """Each shape once, with the scribe in `tree` (None: this one)."""
    workspace = _repository(root / "ws")
    home = root / "home"
    home.mkdir()
    times = root / "times.jsonl"
    script = [Reply([tool_use_block("list_files", {})]), Reply([text_block("looked")]),
              Reply([tool_use_block("write_file", {"path": "src0/new.py", "content": "y = 1\n"})]),
              Reply([text_block("wrote")])]
    found: dict[str, tuple[float, list[dict[str, Any]]]] = {}
    with FakeMessagesServer(script) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRIBE_", "ANTHROPIC_"))}
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="benchmark-no-key", HOME=str(home),
                   XDG_CONFIG_HOME=str(home / ".config"), SCRIBE_CURATE_NOTES="false",
                   SCRIBE_BENCH_GIT_TIMES=str(times),
                   PYTHONPATH=os.pathsep.join([str(hook), *([str(tree)] if tree else [])]))
        found["read-only turn"] = _scribe(["run", "-p", "full-auto", "look"], workspace, env, times)
        found["auto-commit turn"] = _scribe(["run", "-p", "full-auto", "--auto-commit", "write"], workspace, env, times)
        found["scribe diff"] = _scribe(["diff"], workspace, env, times)
        found["scribe undo"] = _scribe(["undo"], workspace, env, times)
    return found


def measure(before: Path | None, runs: int) -> dict[str, Any]:
    trees: dict[str, Path | None] = {"this tree": None, **({"before": before} if before else {})}
    samples: dict[str, dict[str, list[tuple[float, float, int, int]]]] = {t: {s: [] for s in SHAPES} for t in trees}
    with tempfile.TemporaryDirectory(prefix="scribe-bench-git-") as tmp:
        hook = Path(tmp) / "hook"
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(_HOOK)
        for run in range(runs):
            for name, tree in trees.items():
                found = _one(tree, Path(tmp) / f"{name.replace(' ', '-')}-{run}", hook)
                for shape, (wall, records) in found.items():
                    timed = [r["s"] for r in records if not r["batch"]]
                    calls = sum(1 for r in records if r.get("request") or not r["batch"])
                    samples[name][shape].append((wall, sum(timed), calls, len(records) - len(timed)))
    return {name: {shape: {"runs": len(rows), "wall_ms": _median_ms(r[0] for r in rows),
                           "git_ms": _median_ms(r[1] for r in rows), "git_processes": rows[0][2],
                           "long_lived_readers": rows[0][3]}
                   for shape, rows in shapes.items()} for name, shapes in samples.items()}


def _median_ms(values: Any) -> float:
    return round(statistics.median(list(values)) * 1000, 1)


def report(data: dict[str, Any]) -> str:
    lines = ["| shape | version | git calls | time in git (median) | whole command (median) |",
             "|---|---|---|---|---|"]
    for shape in SHAPES:
        for name, shapes in data.items():
            row = shapes[shape]
            readers = f" (+{row['long_lived_readers']} long-lived)" if row["long_lived_readers"] else ""
            lines.append(f"| {shape} | {name} | {row['git_processes']}{readers} | {row['git_ms']} ms | "
                         f"{row['wall_ms']} ms |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.git_calls", description=__doc__)
    parser.add_argument("--before", type=Path, help="a folder holding an earlier version's scribe package")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    data = measure(args.before.resolve() if args.before else None, args.runs)
    print(report(data))
    print(json.dumps(data, indent=2), file=sys.stderr)


if __name__ == "__main__":
    main()
