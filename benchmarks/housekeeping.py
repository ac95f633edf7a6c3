"""Housekeeping and the person's time: the REPL, and a chain of `scribe run`, against a fake
Messages API whose side calls (observer, reflector, curator) each take SIDE_S seconds to answer,
the agent's calls none.

`python -m benchmarks.housekeeping --headless [--llama]`: five `scribe run` (a fact taught, a new
session, two pastes past the observe threshold, a continuation), each timed from its start to its
answer and from its answer to its exit, the housekeeping it left timed apart; with housekeeping
detached (as shipped) and inline, and back to back (each run at once after the last); `--llama`
adds the chain against llama.cpp's server with SmolLM2.

One REPL, in a pseudo-terminal, as a person meets it:
- start: `scribe` in a workspace with an earlier session the notes have not taken (its curation
  is a side call), from the process's start to its prompt drawn;
- a turn that triggers compression: a long paste, then a shorter one that takes the session
  over the observe threshold (the long one before it is to be observed), from Enter to the
  answer on screen;
- exit: `/exit` from Enter to the process's end, while what was begun in the background runs.

Each is measured twice: with `observe_ahead` as shipped (`auto`: the fake API's agent calls are
fast, so nothing works ahead between turns) and `always` (compression between turns, off the
main thread). The fake model answers the agent at once, so every second measured is scribe's.

`python -m benchmarks.housekeeping --llama`: one such session against llama.cpp's server with
SmolLM2 (`llama_session`), whose side calls are slow by nature; there each turn's wait is given
beside the agent calls' own time.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel, side_call_kind

SIDE_S = 10.0  # each side call's answer takes this long
RUNS = 3
SCRIBE = str(Path(sys.executable).parent / "scribe")
TIMEOUT_S = 120
PASTE_LINES = 120  # ~3,000 tokens: the next message, of 25 such lines (over the 400 kept raw), has it observed
SETTINGS = {
    "SCRIBE_OBSERVE_TOKENS": "2000", "SCRIBE_REFLECT_TOKENS": "40000",
    "SCRIBE_OBSERVE_ON_PAYBACK": "false", "SCRIBE_COMPRESS_WHEN_COLD": "false", "SCRIBE_WATCH_FILES": "0",
    "SCRIBE_PERMISSION_MODE": "read-only",
}
_TURN = re.compile(r"turn-(\d+)")
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


class SlowSideCalls:
    """A responder: the agent answered at once (`answer N` for a message naming `turn-N`), every
    side call after SIDE_S seconds, as a summariser that reads carefully would answer it."""

    def __init__(self, side_s: float = SIDE_S) -> None:
        self.side_s = side_s
        self.model = SideCallModel(self._agent)
        self.side_calls: list[str] = []

    def __call__(self, request: dict[str, Any]) -> Any:
        kind = side_call_kind(request)
        if kind != "agent":
            self.side_calls.append(kind)
            time.sleep(self.side_s)
        return self.model(request)

    @staticmethod
    def _agent(request: dict[str, Any]) -> Reply:
        content = request["messages"][-1]["content"]
        text = content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)
        found = _TURN.search(text)
        return Reply.text(f"answer {found.group(1) if found else '?'}.")


def paste(n: int, count: int = PASTE_LINES) -> str:
    lines = [f"line {i}: the build writes each artefact to its own folder and the cache keeps every layer"
             for i in range(count)]
    return f"turn-{n} summarise this log in one line: " + " ".join(lines)


def _env(home: Path, runtime: Path, base_url: str, ahead: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SCRIBE_", "ANTHROPIC_")) and k not in ("COLUMNS", "LINES")}
    return env | SETTINGS | {
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_RUNTIME_DIR": str(runtime),
        "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "benchmark-no-key",
        "SCRIBE_OBSERVE_AHEAD": ahead, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1",
    }


def one_session(root: Path, ahead: str) -> dict[str, Any]:
    """One REPL from start to exit; the person's seconds at each point, and the side calls made."""
    import pexpect  # noqa: PLC0415 - a test dependency, needed by this benchmark only

    home, runtime, workspace = root / "home", root / "runtime", root / "workspace"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    responder = SlowSideCalls()
    with FakeMessagesServer(responder) as server:
        env = _env(home, runtime, server.base_url, ahead)
        # An earlier session the notes have not taken: the REPL's start has it to curate.
        subprocess.run([SCRIBE, "run", "turn-0 note that the tests run with make check"], cwd=workspace, env=env,
                       capture_output=True, check=True, timeout=TIMEOUT_S)
        before = len(responder.side_calls)
        started = time.perf_counter()
        child = pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8",
                              timeout=TIMEOUT_S)
        try:
            child.expect("›")
            start_s = time.perf_counter() - started
            turns = []
            # the paste as a terminal sends one (bracketed), then a line typed
            for n, message in ((1, paste(1)), (2, paste(2, 25))):
                child.send(f"{PASTE_START}{message}{PASTE_END}")
                time.sleep(0.5)  # the person reads what they typed
                began = time.perf_counter()
                child.send("\r")
                child.expect(f"answer {n}\\.")
                turns.append(time.perf_counter() - began)
                child.expect("›")  # the next prompt
            time.sleep(0.5)
            began = time.perf_counter()
            child.send("/exit\r")
            child.expect(pexpect.EOF)
            exit_s = time.perf_counter() - began
        finally:
            child.close(force=True)
        side = responder.side_calls[before:]
    return {"start_s": round(start_s, 3), "paste_s": round(turns[0], 3), "compressing_turn_s": round(turns[1], 3),
            "exit_s": round(exit_s, 3), "side_calls": side}


def drain(child: Any) -> None:
    """Read what the pseudo-terminal holds for 20 ms."""
    import pexpect  # noqa: PLC0415

    try:
        child.read_nonblocking(1 << 16, timeout=0.02)
    except pexpect.TIMEOUT:
        pass


LLAMA_SETTINGS = {
    "SCRIBE_MODEL": "smollm2-135m", "SCRIBE_OBSERVER_MODEL": "smollm2-135m", "SCRIBE_MAX_TOKENS": "48",
    "SCRIBE_OBSERVE_TOKENS": "600", "SCRIBE_REQUEST_TIMEOUT_S": "900", "SCRIBE_MAX_RETRIES": "1",
}


def llama_session(root: Path) -> dict[str, Any]:
    """The same session against llama.cpp's server with SmolLM2 (two slots of 4,096 tokens, one
    thread), whose side calls are slow by nature. Its answers are the model's own, so a turn is
    timed from Enter to its answer in the log, and the agent calls' own time (their latency as
    logged) is given beside it: the rest is what scribe made the person wait."""
    import pexpect  # noqa: PLC0415

    from scribe.log.events import AssistantEvent, UsageEvent, UserEvent  # noqa: PLC0415
    from scribe.log.jsonl import read_log  # noqa: PLC0415

    from .llama import Server  # noqa: PLC0415

    home, runtime, workspace = root / "home", root / "runtime", root / "workspace"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    with Server(8192, slots=2) as server:
        env = _env(home, runtime, server.base_url, "auto") | LLAMA_SETTINGS
        subprocess.run([SCRIBE, "run", "turn-0 note that the tests run with make check"], cwd=workspace, env=env,
                       capture_output=True, check=True, timeout=900)
        sessions = workspace / ".scribe" / "sessions"
        earlier = set(sessions.glob("*.jsonl"))

        def answered(n: int) -> list[Any]:
            """The log's events once the REPL's session holds n answered messages (or [])."""
            logs = set(sessions.glob("*.jsonl")) - earlier
            if not logs:
                return []
            events = read_log(next(iter(logs))).events
            users = [e.seq for e in events if isinstance(e, UserEvent)]
            done = len(users) >= n and any(isinstance(e, AssistantEvent) and e.stop_reason != "tool_use"
                                           and e.seq > users[n - 1] for e in events)
            return events if done else []

        started = time.perf_counter()
        child = pexpect.spawn(SCRIBE, [], cwd=str(workspace), env=env, dimensions=(40, 120), encoding="utf-8",
                              timeout=900)
        turns, model_s = [], []
        try:
            child.expect("›")
            start_s = time.perf_counter() - started
            for n, message in ((1, paste(1, 40)), (2, paste(2, 25))):
                time.sleep(1)
                child.send(f"{PASTE_START}{message}{PASTE_END}")
                time.sleep(0.5)
                began = time.perf_counter()
                child.send("\r")
                deadline = began + 900
                while not (events := answered(n)) and time.perf_counter() < deadline:
                    drain(child)  # the screen's output read, or scribe's writes to it would block
                turns.append(time.perf_counter() - began)
                users = [e.seq for e in events if isinstance(e, UserEvent)]
                model_s.append(sum(e.latency_ms for e in events if isinstance(e, UsageEvent) and e.purpose == "agent"
                                   and e.seq > users[n - 1] and (n == len(users) or e.seq < users[n])) / 1000)
            child.expect("›")
            time.sleep(1)
            began = time.perf_counter()
            child.send("/exit\r")
            child.expect(pexpect.EOF)
            exit_s = time.perf_counter() - began
        finally:
            child.close(force=True)
        logs = set(sessions.glob("*.jsonl")) - earlier
        side = [e.purpose for e in read_log(next(iter(logs))).events
                if isinstance(e, UsageEvent) and e.purpose != "agent"]
    return {"start_s": round(start_s, 3), "paste_s": round(turns[0], 3), "paste_model_s": model_s[0],
            "compressing_turn_s": round(turns[1], 3), "compressing_turn_model_s": model_s[1],
            "exit_s": round(exit_s, 3), "side_calls_logged": side}


# -- headless: `scribe run` never waits on housekeeping ------------------------------------------

HEADLESS_SETTINGS = {"SCRIBE_OBSERVE_TOKENS": "2000", "SCRIBE_REFLECT_TOKENS": "40000",
                     "SCRIBE_OBSERVE_ON_PAYBACK": "false", "SCRIBE_COMPRESS_WHEN_COLD": "false",
                     "SCRIBE_WATCH_FILES": "0", "SCRIBE_CURATE_NOTES": "true"}
FACT = "the tests run with make check-all"


def timed_run(scribe: str, args: list[str], workspace: Path, env: dict[str, str], stdin: str | None = None,
              timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """`scribe run ARGS -o stream-json` as a process: seconds to its answer (the `result` line
    written), from the answer to the process's end, and in all; what it said on stderr."""
    began = time.perf_counter()
    proc = subprocess.Popen([scribe, "run", *args, "-o", "stream-json"], cwd=workspace, env=env, text=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    assert proc.stdout is not None
    answered = None
    for line in proc.stdout:
        if line.startswith('{"type":"result"') or line.startswith('{"type": "result"'):
            answered = time.perf_counter()
    err = proc.stderr.read() if proc.stderr is not None else ""
    proc.wait(timeout=timeout)
    ended = time.perf_counter()
    if proc.returncode != 0 or answered is None:
        raise SystemExit(f"scribe run {' '.join(args)} failed ({proc.returncode}): {err}")
    return {"answer_s": round(answered - began, 3), "after_answer_s": round(ended - answered, 3),
            "total_s": round(ended - began, 3), "stderr": err}


def finished(workspace: Path, limit_s: float = 900) -> float:
    """Wait until no process finishes this workspace's sessions any more; the seconds waited."""
    began = time.perf_counter()
    needle = f"/{workspace.name}".encode()
    while time.perf_counter() - began < limit_s:
        alive = False
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                cmdline = (proc / "cmdline").read_bytes()
                cwd = os.readlink(proc / "cwd").encode()
            except OSError:
                continue
            if b"scribe.cli.finish" in cmdline and cwd.endswith(needle):
                alive = True
                break
        if not alive:
            return round(time.perf_counter() - began, 3)
        time.sleep(0.05)
    raise SystemExit("a finishing process outlived the benchmark's limit")


def headless_chain(root: Path, base_url: str, extra: dict[str, str], scribe: str = SCRIBE,
                   timeout: float = TIMEOUT_S, *, back_to_back: bool = False) -> dict[str, Any]:
    """A session that teaches a fact, a new one that should start with it, then a paste past the
    observe threshold continued twice: what each run waited for, and what the next request held.
    Each run starts once the last one's housekeeping has finished (as a person's next command
    comes seconds later), which is measured apart; `back_to_back`: at once, as a script's next
    command does (a run that continues the session then takes it back from the housekeeping)."""
    from scribe.log.events import ObservationEvent, UserEvent  # noqa: PLC0415
    from scribe.log.jsonl import read_log  # noqa: PLC0415

    home, runtime, workspace = root / "home", root / "runtime", root / "workspace"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    workspace.mkdir()
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    env = _env(home, runtime, base_url, "auto") | HEADLESS_SETTINGS | extra
    runs: dict[str, Any] = {}
    chain = [("teaches", ["turn-1 remember: " + FACT + ". Say ok."], None),
             ("new session", ["turn-2 how do the tests run?"], None),
             ("paste", ["-c", "-"], paste(3)),
             ("past the threshold", ["-c", "-"], paste(4)),
             ("continued", ["-c", "turn-5 go on"], None)]
    for name, args, stdin in chain:
        runs[name] = timed_run(scribe, args, workspace, env, stdin, timeout)
        runs[name]["housekeeping_s"] = 0.0 if back_to_back else finished(workspace)
    if back_to_back:
        runs["continued"]["housekeeping_s"] = finished(workspace)
    notes = workspace / ".scribe" / "notes.md"
    logs = sorted((workspace / ".scribe" / "sessions").glob("*.jsonl"))
    second = read_log(logs[-1]).events
    observed = [e for e in second if isinstance(e, ObservationEvent)]
    last_user = [e for e in second if isinstance(e, UserEvent)][-1]
    return {"runs": runs, "notes_hold_fact": notes.is_file() and "make check-all" in notes.read_text(),
            "second_session_began_with_fact": "make check-all" in read_log(logs[-1]).events[0].system,  # type: ignore[attr-defined]
            "observed_before_last_run": bool(observed) and observed[0].seq < last_user.seq}


def measure_headless(side_s: float = SIDE_S) -> dict[str, Any]:
    """The chain against the fake API whose side calls take `side_s`, with housekeeping detached
    (as shipped) and inline (done before exiting)."""
    out: dict[str, Any] = {"side_s": side_s, "load": [round(os.getloadavg()[0], 2)]}
    for mode in ("detached", "inline"):
        responder = SlowSideCalls(side_s)
        with FakeMessagesServer(responder) as server, \
                tempfile.TemporaryDirectory(prefix="scribe-headless-") as tmp:
            out[mode] = headless_chain(Path(tmp), server.base_url, {"SCRIBE_HOUSEKEEPING": mode})
            out[mode]["side_calls"] = responder.side_calls
    responder = SlowSideCalls(side_s)
    with FakeMessagesServer(responder) as server, tempfile.TemporaryDirectory(prefix="scribe-headless-") as tmp:
        out["back to back"] = headless_chain(Path(tmp), server.base_url, {"SCRIBE_HOUSEKEEPING": "detached"},
                                             back_to_back=True)
        out["back to back"]["side_calls"] = responder.side_calls
    out["load"].append(round(os.getloadavg()[0], 2))
    return out


def llama_headless() -> dict[str, Any]:
    """The chain against llama.cpp's server with SmolLM2 (two slots of 4,096 tokens, one thread):
    side calls slow by nature, the agent's answers the model's own."""
    from .llama import Server  # noqa: PLC0415

    with Server(8192, slots=2) as server, tempfile.TemporaryDirectory(prefix="scribe-headless-llama-") as tmp:
        return headless_chain(Path(tmp), server.base_url, LLAMA_SETTINGS | {"SCRIBE_OBSERVE_TOKENS": "900"},
                              timeout=900)


def headless_section(data: dict[str, Any], llama: dict[str, Any] | None = None) -> str:
    rows = ["| run | answer | after the answer | housekeeping after it (nobody waits) |", "|---|---|---|---|"]
    columns = [("detached", data["detached"])] + ([("llama.cpp", llama)] if llama else [])
    out = [f"### Headless runs and housekeeping (side calls answered after {data['side_s']:g} s)\n"]
    for label, chain in columns + [("inline", data["inline"]), ("back to back", data["back to back"])]:
        out.append(f"**{label}**\n")
        out += rows[:]
        for name, run in chain["runs"].items():
            out.append(f"| {name} | {run['answer_s']:.2f} s | {run['after_answer_s']:.2f} s | "
                       f"{run['housekeeping_s']:.2f} s |")
        out.append(f"\nnotes hold the fact: {chain['notes_hold_fact']}; the new session began with it: "
                   f"{chain['second_session_began_with_fact']}; the paste observed before the last run: "
                   f"{chain['observed_before_last_run']}\n")
    return "\n".join(out)


def measure(runs: int = RUNS) -> dict[str, Any]:
    out: dict[str, Any] = {"side_s": SIDE_S, "runs": runs, "load": [round(os.getloadavg()[0], 2)]}
    for ahead in ("auto", "always"):
        samples = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="scribe-housekeeping-") as tmp:
                samples.append(one_session(Path(tmp), ahead))
        out[ahead] = {key: statistics.median(s[key] for s in samples)
                      for key in ("start_s", "paste_s", "compressing_turn_s", "exit_s")}
        out[ahead]["samples"] = samples
    out["load"].append(round(os.getloadavg()[0], 2))
    return out


def section(data: dict[str, Any]) -> str:
    rows = ["| the person waits for | `observe_ahead = auto` | `observe_ahead = always` |", "|---|---|---|"]
    for key, label in (("start_s", "`scribe` to its prompt (an earlier session to curate)"),
                       ("paste_s", "the answer to a long paste"),
                       ("compressing_turn_s", "the answer of the next turn, which passes the observe threshold"),
                       ("exit_s", "`/exit` to the process's end")):
        rows.append(f"| {label} | {data['auto'][key]:.2f} s | {data['always'][key]:.2f} s |")
    calls = {ahead: ", ".join(sorted({k for s in data[ahead]["samples"] for k in s["side_calls"]})) or "none"
             for ahead in ("auto", "always")}
    return (f"### Housekeeping and the person's time (side calls answered after {data['side_s']:g} s)\n\n"
            + "\n".join(rows)
            + f"\n\nMedian of {data['runs']} REPL sessions each (load average {data['load'][0]} → "
              f"{data['load'][1]}); side calls made: {calls['auto']} (auto), {calls['always']} (always). "
              "The fake model answers the agent at once: every second here is scribe's.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--headless"]:
        headless = measure_headless()
        local = llama_headless() if "--llama" in sys.argv else None
        print(headless_section(headless, local))
        print(json.dumps({"fake": headless, "llama": local}, indent=1, default=str))
    elif sys.argv[1:2] == ["--llama"]:
        with tempfile.TemporaryDirectory(prefix="scribe-housekeeping-llama-") as tmp:
            print(llama_session(Path(tmp)))
    else:
        result = measure(int(sys.argv[1]) if len(sys.argv) > 1 else RUNS)
        print(section(result))
        print(result)
