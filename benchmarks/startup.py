"""Start-up, side by side with Claude Code, against one fake Messages API in one run.

Measured, each process timed from its start to its exit (the wall time a script or a person waits):
- a scripted 15-turn coding session (coding_session.py) through `claude -p` / `claude -p --continue`
  and through `scribe run` / `scribe run -c`, the median turn of each;
- a trivial turn, `claude -p hello` against `scribe run hello`, median of 7;
- `scribe` (the REPL) from its start to its prompt drawn, in a pseudo-terminal;
- `scribe --help`;
- the import profile: `python -X importtime` of the CLI and of a whole `scribe run`.

Each run is one process that starts, works and exits: nothing is kept running between runs on
either side, and after every run the benchmark looks for any process, of either tool, still holding
the run's own marker in its environment (a server left behind would be one); each is counted and
reported. The tools take turns within each round, so the machine's other work falls on all of them
alike; the load average is recorded beside every part. Claude Code is found at `$SCRIBE_BENCH_CLAUDE`, on PATH, or where
`npm install @anthropic-ai/claude-code` in /tmp/cc puts it; without it its rows say so.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.fakeapi import FakeMessagesServer, RecordedRequest, side_call_kind

from .coding_session import CodingModel, answer_for, dialect_of, prompt_for

TURNS = 15
TRIVIAL_RUNS = 7
REPL_RUNS = 7
HELP_RUNS = 7
TOP_IMPORTS = 8
CLAUDE_DEFAULT = Path("/tmp/cc/node_modules/.bin/claude")
# Set in each run's environment, with a value of its own, to find what that run left running.
MARKER = "SCRIBE_BENCH_RUN"
SCRIBE = str(Path(sys.executable).parent / "scribe")
TIMEOUT_S = 300


@dataclass
class Tool:
    """One way of running turns: its label, the command for a first and a next turn, its environment."""

    key: str
    label: str
    first: list[str]
    next: list[str]
    env: dict[str, str]
    workspace: Path
    seconds: list[float] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    # Processes still running a second after a run of this tool returned (none expected).
    left_behind: int = 0

    def reset(self) -> None:
        """Forget the figures of an earlier measurement."""
        self.seconds.clear()
        self.calls.clear()
        self.failed.clear()
        self.left_behind = 0

    def run(self, server: FakeMessagesServer, argv: list[str], expect: str, cwd: Path | None = None) -> float:
        """Run one process to its end; its wall seconds. The calls it made are counted by kind (the
        processes run one at a time, so the requests between its start and end are its own), and
        any process it left behind is a failure of the run."""
        before = len(server.requests)
        marker = secrets.token_hex(8)
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd or self.workspace, env=self.env | {MARKER: marker}, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
        seconds = time.perf_counter() - started
        self.left_behind += len(left_running(marker))
        for request in server.requests[before:]:
            self.calls[_kind(request)] += 1
        if done.returncode != 0 or expect not in done.stdout:
            self.failed.append(f"{' '.join(argv[1:3])}…: exit {done.returncode}: "
                               f"{(done.stdout + done.stderr).strip()[-300:]}")
        return seconds


def holding(variable: str, value: str) -> list[int]:
    """The processes, of any program, whose environment sets `variable` to `value`."""
    needle = f"{variable}={value}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue  # gone while we looked, or not ours to read
    return found


def left_running(marker: str, grace_s: float = 1.0) -> list[int]:
    """The processes, of any program, whose environment holds `marker` once `grace_s` has passed
    (killed, so that one run's leftovers cannot slow the next): what a run left running."""
    time.sleep(grace_s)
    found = holding(MARKER, marker)
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return found


def _kind(request: RecordedRequest) -> str:
    if request.status != 200:
        return "rejected"
    memory = side_call_kind(request.json)
    if memory != "agent":
        return memory
    return "agent" if dialect_of(request.json) is not None else "other"


def compile_tree() -> None:
    """Bytecode for scribe's own modules, as `pip install` writes it for an installed package (an
    editable install writes it on first import, unless PYTHONDONTWRITEBYTECODE is set)."""
    import scribe  # noqa: PLC0415

    root = Path(scribe.__file__).parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-x", r"/(tests|benchmarks)/", str(root)],
                   check=True, capture_output=True)


def find_claude() -> str | None:
    named = os.environ.get("SCRIBE_BENCH_CLAUDE") or shutil.which("claude")
    if named:
        return named
    return str(CLAUDE_DEFAULT) if CLAUDE_DEFAULT.exists() else None


def load() -> float:
    return round(os.getloadavg()[0], 2)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _git_workspace(path: Path) -> Path:
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _clean_env(home: Path, base_url: str) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE goes too: an installation has its bytecode (compile_tree), and a
    # run that compiled scribe's modules from source each time would time the compiler.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SCRIBE_", "ANTHROPIC_", "CLAUDE_"))
           and k not in ("COLUMNS", "LINES", "PYTHONDONTWRITEBYTECODE")}
    return env | {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "ANTHROPIC_BASE_URL": base_url,
                  "ANTHROPIC_API_KEY": "benchmark-no-key"}


def _tools(root: Path, base_url: str, claude: str | None) -> list[Tool]:
    """Claude Code (when installed) and scribe, each with its own home and workspace."""
    tools = []
    if claude is not None:
        home = root / "claude-home"
        home.mkdir()
        env = _clean_env(home, base_url) | {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                                            "DISABLE_TELEMETRY": "1"}
        # The three tools a turn uses are allowed, as a person's settings would allow them
        # (--dangerously-skip-permissions is refused to root).
        allowed = ["--allowedTools", "Write,Bash,Read", "--"]
        tools.append(Tool("claude", "Claude Code `claude -p` / `claude -p --continue`", [claude, "-p", *allowed],
                          [claude, "-p", "--continue", *allowed], env, _git_workspace(root / "claude")))
    home = root / "scribe-home"
    home.mkdir()
    env = _clean_env(home, base_url) | {"SCRIBE_PERMISSION_MODE": "full-auto"}
    tools.append(Tool("scribe", "scribe `scribe run` / `scribe run -c`", [SCRIBE, "run"], [SCRIBE, "run", "-c"], env,
                      _git_workspace(root / "scribe")))
    return tools


def _rounds(tools: list[Tool], n: int) -> list[Tool]:
    """The tools in round `n`'s order: each round starts with the next tool, so none always goes
    first (or always follows another's)."""
    shift = n % len(tools)
    return tools[shift:] + tools[:shift]


def run_session(tools: list[Tool], server: FakeMessagesServer) -> dict[str, Any]:
    load_before = load()
    for tool in tools:
        tool.reset()
    for n in range(1, TURNS + 1):
        for tool in _rounds(tools, n):
            argv = (tool.first if n == 1 else tool.next) + [prompt_for(n)]
            tool.seconds.append(tool.run(server, argv, answer_for(n)))
    return {"load": [load_before, load()], "tools": {
        t.key: {"label": t.label, "median_s": _median(t.seconds), "first_s": round(t.seconds[0], 3),
                "total_s": round(sum(t.seconds), 2), "seconds": [round(s, 3) for s in t.seconds],
                "calls": dict(t.calls), "failed": list(t.failed), "left_behind": t.left_behind} for t in tools}}


def run_trivial(tools: list[Tool], server: FakeMessagesServer) -> dict[str, Any]:
    load_before = load()
    for tool in tools:
        tool.reset()
    for n in range(TRIVIAL_RUNS):
        for tool in _rounds(tools, n):
            tool.seconds.append(tool.run(server, tool.first[:2] + ["hello"], "Hello!"))
    return {"load": [load_before, load()], "tools": {
        t.key: {"median_s": _median(t.seconds), "seconds": [round(s, 3) for s in t.seconds],
                "calls": dict(t.calls), "failed": list(t.failed), "left_behind": t.left_behind} for t in tools}}


def repl_to_prompt(env: dict[str, str], workspace: Path, *, after_run: bool) -> dict[str, Any]:
    """`scribe` in a pseudo-terminal: seconds from its start to its prompt drawn; then /exit.
    `after_run`: each start follows a `scribe run` in the workspace (not timed), so there is a
    session to curate into the notes as the REPL opens its own."""
    import pexpect  # noqa: PLC0415 - a test dependency, needed by this part only

    load_before = load()
    samples = []
    env = env | {"TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"}
    for _ in range(REPL_RUNS):
        if after_run:
            subprocess.run([SCRIBE, "run", "hello"], cwd=workspace, env=env, capture_output=True, check=True,
                           timeout=TIMEOUT_S)
        started = time.perf_counter()
        child = pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8",
                              timeout=60)
        try:
            child.expect("›")
            samples.append(time.perf_counter() - started)
            child.send("/exit\r")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    return {"load": [load_before, load()], "median_s": _median(samples), "seconds": [round(s, 3) for s in samples]}


def help_time(env: dict[str, str], workspace: Path) -> dict[str, Any]:
    load_before = load()
    samples = []
    for _ in range(HELP_RUNS):
        started = time.perf_counter()
        subprocess.run([SCRIBE, "--help"], cwd=workspace, env=env, capture_output=True, check=True)
        samples.append(time.perf_counter() - started)
    return {"load": [load_before, load()], "median_s": _median(samples), "seconds": [round(s, 3) for s in samples]}


_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def import_profile(argv: list[str], env: dict[str, str], workspace: Path) -> dict[str, Any]:
    """`python -X importtime ARGV`: the total, and the top-level imports that took longest (each
    with all it imported in turn, first importer's count)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=workspace, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    wall = time.perf_counter() - started
    top: list[tuple[int, str]] = []
    for line in done.stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and len(match.group(3)) <= 1:  # the first level: imported by the program itself
            top.append((int(match.group(2)), match.group(4)))
    top.sort(reverse=True)
    return {"command": "python -X importtime " + " ".join(argv), "exit": done.returncode, "wall_s": round(wall, 3),
            "imports_ms": round(sum(us for us, _ in top) / 1000, 1),
            "top": [{"module": name, "ms": round(us / 1000, 1)} for us, name in top[:TOP_IMPORTS] if us >= 1000]}


def measure() -> dict[str, Any]:
    compile_tree()
    claude = find_claude()
    uptime_before = _uptime()
    model = CodingModel({})
    with tempfile.TemporaryDirectory(prefix="scribe-bench-startup-") as tmp, FakeMessagesServer(model) as server:
        root = Path(tmp)
        tools = _tools(root, server.base_url, claude)
        # Claude Code's file tools name absolute paths, so the model needs its workspace; scribe's
        # take paths in the workspace, the same for both of its tools.
        model.workspaces.update({"claude": root / "claude", "scribe": root / "scribe"})
        by_key = {t.key: t for t in tools}
        session = run_session(tools, server)
        trivial = run_trivial(tools, server)
        scribe = by_key["scribe"]
        results: dict[str, Any] = {
            "uptime": [uptime_before],
            "claude_code": _claude_version(claude, by_key.get("claude")),
            "session": session, "trivial": trivial,
            "repl": repl_to_prompt(scribe.env, _git_workspace(root / "repl"), after_run=False),
            "repl_after_run": repl_to_prompt(scribe.env, scribe.workspace, after_run=True),
            "help": help_time(scribe.env, scribe.workspace),
            "imports": [import_profile(["-c", "import scribe.cli.app"], scribe.env, scribe.workspace),
                        import_profile(["-c", "import anthropic"], scribe.env, scribe.workspace),
                        import_profile(["-m", "scribe", "run", "hello"], scribe.env, scribe.workspace)],
            "rejected": sum(1 for r in server.requests if r.status != 200),
        }
    results["uptime"].append(_uptime())
    return results


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _claude_version(claude: str | None, tool: Tool | None) -> str | None:
    if claude is None or tool is None:
        return None
    done = subprocess.run([claude, "--version"], env=tool.env, capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or None


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _calls(calls: dict[str, int]) -> str:
    agent = calls.get("agent", 0)
    others = ", ".join(f"{n} {kind}" for kind, n in sorted(calls.items()) if kind != "agent")
    return f"{agent}" + (f" (+ {others})" if others else "")


def section(data: dict[str, Any]) -> str:
    session, trivial = data["session"]["tools"], data["trivial"]["tools"]
    keys = [k for k in ("claude", "scribe") if k in session]
    names = {"claude": f"Claude Code {(data['claude_code'] or '').split(' ')[0]}".strip(), "scribe": "scribe"}
    head = "| | " + " | ".join(names[k] for k in keys) + " | load (1 min) |"
    rows = [head, "|---" * (len(keys) + 2) + "|"]
    load = data["session"]["load"]
    rows.append(f"| {TURNS}-turn coding session: median turn | "
                + " | ".join(_s(session[k]["median_s"]) for k in keys) + f" | {load[0]} → {load[1]} |")
    rows.append("| its first turn / all turns | " + " | ".join(
        f"{session[k]['first_s']:.2f} s / {session[k]['total_s']:.1f} s" for k in keys) + " | |")
    rows.append("| its model calls: agent (+ others) | " + " | ".join(_calls(session[k]["calls"]) for k in keys) + " | |")
    load = data["trivial"]["load"]
    rows.append(f"| trivial turn (`-p hello` / `run hello`), median of {TRIVIAL_RUNS} | "
                + " | ".join(_s(trivial[k]["median_s"]) for k in keys) + f" | {load[0]} → {load[1]} |")
    rows.append("| its model calls: agent (+ others) | " + " | ".join(_calls(trivial[k]["calls"]) for k in keys) + " | |")
    rows.append("| processes left running after the runs | " + " | ".join(
        str(session[k]["left_behind"] + trivial[k]["left_behind"]) for k in keys) + " | |")
    failed = [f"{names[k]}: {f}" for part in (session, trivial) for k in keys for f in part[k]["failed"]]
    if "claude" not in keys:
        failed.append("Claude Code is not installed here (`npm install @anthropic-ai/claude-code`, or "
                      "SCRIBE_BENCH_CLAUDE names its executable): its column is missing")
    repl, after, helped = data["repl"], data["repl_after_run"], data["help"]
    lines = [
        "### Start-up, side by side with Claude Code",
        "",
        "Every figure is one process's wall time, start to exit, against the same fake Messages API; the "
        "tools take turns within each round. Each run is a new process on both sides, with nothing kept "
        "running between runs (a process still holding a run's marker a second after it returned would be "
        "counted below).",
        "",
        *rows,
        "",
        "| scribe | median | runs | load (1 min) |",
        "|---|---|---|---|",
        f"| `scribe` (REPL) to its prompt, in a new workspace | {_s(repl['median_s'])} | {REPL_RUNS} | "
        f"{repl['load'][0]} → {repl['load'][1]} |",
        f"| `scribe` (REPL) to its prompt, after a `scribe run` (a session to curate) | {_s(after['median_s'])} | "
        f"{REPL_RUNS} | {after['load'][0]} → {after['load'][1]} |",
        f"| `scribe --help` | {_s(helped['median_s'])} | {HELP_RUNS} | {helped['load'][0]} → {helped['load'][1]} |",
        "",
    ]
    for profile in data["imports"]:
        top = ", ".join(f"{t['module']} {t['ms']:.0f}" for t in profile["top"])
        lines.append(f"`{profile['command']}`: {profile['wall_s']:.2f} s, of it imports {profile['imports_ms']:.0f} ms; "
                     f"the largest (ms, with what each imports in turn): {top}.")
        lines.append("")
    lines.append(f"Requests the fake API rejected: {data['rejected']}. Load: `{data['uptime'][0]}` before, "
                 f"`{data['uptime'][1]}` after.")
    if failed:
        lines += ["", "Turns that did not do their work:", *[f"- {f}" for f in failed]]
    return "\n".join(lines)
