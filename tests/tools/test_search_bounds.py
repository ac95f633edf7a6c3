"""search_files, recall and `scribe log search` keep their memory and time bounded on any input:
a line of twenty megabytes and the pattern the docs name as one that backtracks without end,
`(a|aa)+$`, end in one line saying what was stopped, and the turn goes on. Through the real
executable (a MemoryError was its traceback and exit 1)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import SCRIBE, events_of, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import AssistantEvent, ObservationEvent, ToolResultEvent, UserEvent
from scribe.log.jsonl import LogWriter, read_log

BACKTRACKS = "(a|aa)+$"
HUGE = 20_000_000


def results(log: Path) -> list[ToolResultEvent]:
    return [e for e in events_of(log) if isinstance(e, ToolResultEvent)]


def path_without_ripgrep() -> str:
    """PATH with every folder that holds `rg` left out (git and the rest stay)."""
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not os.path.exists(os.path.join(d, "rg")))


@pytest.mark.parametrize("engine", ["python", "ripgrep"])
def test_search_files_over_a_twenty_megabyte_line_is_bounded_and_the_turn_goes_on(
        workspace: Path, home: Path, engine: str) -> None:
    path = path_without_ripgrep()
    if engine == "ripgrep":
        rg = shutil.which("rg") or shutil.which("rg", path=str(Path(SCRIBE).parent))
        if rg is None:
            pytest.skip("ripgrep is not installed here")
        path = f"{Path(rg).parent}{os.pathsep}{path}"
    (workspace / "big.txt").write_bytes(b"a" * HUGE)  # one line, no newline
    (workspace / "small.txt").write_text("a needle in a small file\n")
    script = [Reply([tool_use_block("search_files", {"pattern": BACKTRACKS})]),
              Reply([tool_use_block("search_files", {"pattern": "needle"})]),
              Reply.text("searched both")]
    # ripgrep is linear: its budget only guards against a tree too large to search, never hit here
    budget = "1" if engine == "python" else "120"
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "search the files"], workspace,
                         scribe_env(server.base_url, home, PATH=path, SCRIBE_REGEX_TIMEOUT_S=budget),
                         process=True, timeout=600)
    assert ran.code == 0, ran.err
    assert "Traceback" not in ran.err and "MemoryError" not in ran.err
    assert "searched both" in ran.out
    first, second = results(session_logs(workspace)[-1])
    if engine == "python":
        # the first megabyte of the line backtracks past the budget: stopped, in one line
        assert first.is_error and "\n" not in first.output, first.output
        assert "took more than 1 s of matching (regex_timeout_s) and was stopped" in first.output
        assert "1 line longer than 1 MB was searched in its first 1 MB only (big.txt:1)" in first.output
    else:  # ripgrep's engine is linear: it finds the line, and prints only the head of it
        assert not first.is_error and first.output.startswith("big.txt:1:aaaa") and len(first.output) < 400
    found = "small.txt:1:a needle in a small file"
    cut = "\n… 1 line longer than 1 MB was searched in its first 1 MB only (big.txt:1)"
    assert not second.is_error and second.output == found + (cut if engine == "python" else "")


def test_recall_and_log_search_over_a_twenty_megabyte_line_stop_in_one_line(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("hello")]) as server:
        assert run_scribe(["run", "hi"], workspace, scribe_env(server.base_url, home)).code == 0
    log = session_logs(workspace)[-1]
    # a pasted line of twenty megabytes, long since observed: the log keeps it, the prompt does not
    with LogWriter.resume(log, read_log(log)) as writer:
        pasted = writer.append(UserEvent, text="a" * HUGE)
        answer = writer.append(AssistantEvent, content=[{"type": "text", "text": "that is many a's"}],
                               stop_reason="end_turn")
        writer.append(ObservationEvent, text="🔴 the person pasted a very long line of a's", seq_from=1,
                      seq_to=answer.seq, tokens=12, model="claude-haiku-4-5")
    script = [Reply([tool_use_block("recall", {"query": BACKTRACKS})]),
              Reply([tool_use_block("recall", {"query": "many a's"})]),
              Reply.text("recalled")]
    env = scribe_env("", home, SCRIBE_REGEX_TIMEOUT_S="1")
    with FakeMessagesServer(script) as server:
        ran = run_scribe(["run", "-c", "what did I paste?"], workspace, env | {"ANTHROPIC_BASE_URL": server.base_url},
                         process=True, timeout=300)
    assert ran.code == 0, ran.err
    assert "Traceback" not in ran.err and "recalled" in ran.out
    first, second = results(log)[-2:]
    assert first.is_error and "\n" not in first.output, first.output
    assert "took more than 1 s of matching (regex_timeout_s) and was stopped" in first.output
    assert not second.is_error and f"[seq {answer.seq} assistant line 1] that is many a's" in second.output
    assert all("a" * 10_000 not in json.dumps(r.json) for r in server.requests)  # the line was never sent

    searched = run_scribe(["log", "search", BACKTRACKS], workspace, env, process=True, timeout=300)
    assert searched.code == 2 and searched.err.count("\n") == 1, searched.err
    assert searched.err.startswith(f"scribe: the regular expression {BACKTRACKS!r} took more than 1 s")
    found = run_scribe(["log", "search", "--json", "pasted a very"], workspace, env, process=True)
    assert found.code == 0 and found.json()[0]["type"] == "observation"
    # a plain pattern is matched in the line's first megabyte, and the cut said in one note
    tail = run_scribe(["log", "search", "-s", log.stem, "^a{50}"], workspace, env, process=True, timeout=300)
    assert tail.code == 0 and tail.out.count("\n") == 1 and f"{pasted.seq} user" in tail.out
    assert tail.err == "scribe: note: 1 line longer than 1 MB was searched in its first 1 MB only\n"
