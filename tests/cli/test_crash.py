"""SIGKILL at random moments loses nothing acknowledged, and the session always continues.

An event is acknowledged once scribe has reported it: `--output stream-json` prints an assistant
message or a tool result only after its line is in the log. After every kill the log must hold
every acknowledged event unchanged, read without errors (a torn last line is allowed and
reported), and continue with requests the API accepts.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import SCRIBE, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, ToolResultEvent
from scribe.log.jsonl import read_log

KILLS = 25


def busy_model(seed: int) -> Any:
    """Endless work: writes, commands that take a moment, reads, parallel calls, answers."""
    rng = random.Random(seed)
    count = 0

    def respond(request: dict[str, Any]) -> Reply:
        nonlocal count
        count += 1
        kind = count % 5
        if kind == 0:
            return Reply([text_block(f"Done with step {count}.")])
        if kind == 1:
            return Reply([text_block(f"Writing part {count}."), tool_use_block("write_file", {
                "path": f"part_{count % 7}.txt", "content": f"line of step {count}\n" * 200})])
        if kind == 2:
            return Reply([tool_use_block("run_command", {"command": f"sleep {rng.uniform(0.05, 0.4):.2f}; seq 1 500"})])
        if kind == 3:
            return Reply([tool_use_block("list_files", {}), tool_use_block("search_files", {"pattern": "step"})])
        return Reply([tool_use_block("read_file", {"path": f"part_{(count - 3) % 7}.txt"})])

    return respond


def read_lines(stream: Any, into: list[str]) -> None:
    for line in stream:
        into.append(line)


@pytest.mark.slow
@pytest.mark.first  # a long test: started with the suite, not at its end
def test_sigkills_at_random_moments_lose_nothing_acknowledged(workspace: Path, tmp_path: Path) -> None:
    rng = random.Random(29112026)
    with FakeMessagesServer(busy_model(7)) as server:
        env = scribe_env(server.base_url, tmp_path, SCRIBE_RETRY_BACKOFF_S="0.01")
        mid_turn_kills = 0
        for i in range(KILLS):
            args = [SCRIBE, "run", "-p", "full-auto", "-o", "stream-json", "--max-turns", "12", f"turn {i}"]
            log = next(iter(session_logs(workspace)), None)
            if log:
                args.insert(2, "-c")
            before = log.read_bytes() if log else b""
            # a torn tail left by the previous kill is cut off by this writer, and only that
            whole = before[: len(before) - len(read_log(log).torn_tail)] if log else b""
            proc = subprocess.Popen(args, cwd=workspace, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
            printed: list[str] = []
            reader = threading.Thread(target=read_lines, args=(proc.stdout, printed))
            reader.start()
            # The moment follows the session's progress, not the clock (start-up time varies with
            # load): after a random number of model requests, plus a random fraction of a second.
            target, started = len(server.requests) + rng.randint(0, 6), time.monotonic()
            while len(server.requests) < target and proc.poll() is None and time.monotonic() - started < 60:
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            reader.join(timeout=30)

            acknowledged = [json.loads(line) for line in printed if line.strip()]
            if not session_logs(workspace):  # killed before the session began
                assert not acknowledged
                continue
            log = session_logs(workspace)[0]
            after = log.read_bytes()
            read = read_log(log)
            assert after.startswith(whole), f"kill {i}: earlier lines changed"
            assert all(p.kind == "torn" for p in read.problems), (i, read.problems)
            seqs = [e.seq for e in read.events]
            assert seqs == list(range(len(seqs))), f"kill {i}: seq gap"
            by_seq = {e.seq: e for e in read.events}
            for ack in acknowledged:
                if ack["type"] == "assistant":
                    assert isinstance(by_seq.get(ack["seq"]), AssistantEvent), f"kill {i}: lost {ack}"
                    assert by_seq[ack["seq"]].content == ack["message"]["content"]
                elif ack["type"] == "user":
                    event = by_seq.get(ack["tool_use_result"]["seq"])
                    output = ack["message"]["content"][0]["content"]
                    assert isinstance(event, ToolResultEvent) and event.output == output, f"kill {i}"
            if any(a["type"] in ("assistant", "user") for a in acknowledged):
                mid_turn_kills += 1

        # a last, unhurried continue finishes cleanly on top of fifty kills
        final = run_scribe(["run", "-c", "-p", "full-auto", "--max-turns", "6", "wrap up"], workspace, env)
        assert final.code in (0, 3), final.err
    assert all(r.error is None for r in server.requests), [r.error for r in server.requests if r.error]
    assert not read_log(session_logs(workspace)[0]).problems
    assert mid_turn_kills >= KILLS // 3, f"only {mid_turn_kills} kills landed after work began"
