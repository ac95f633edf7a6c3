"""`scribe log search` bounds its regular-expression work like search_files and recall do:
the real executable, a real log, a pattern that would backtrack without end."""

from __future__ import annotations

from pathlib import Path

from helpers import run_scribe, scribe_env
from scribe.fakeapi import FakeMessagesServer, Reply

SLOW_LINE = "a" * 60 + "b"


def test_a_catastrophic_pattern_is_refused_with_one_line_and_exit_2(workspace: Path, home: Path) -> None:
    with FakeMessagesServer([Reply.text("noted")]) as server:
        env = scribe_env(server.base_url, home)
        assert run_scribe(["run", f"remember {SLOW_LINE}"], workspace, env).code == 0
    env["SCRIBE_REGEX_TIMEOUT_S"] = "0.3"
    found = run_scribe(["log", "search", "remember a+b"], workspace, env)
    assert found.code == 0 and SLOW_LINE in found.out
    # timeout: a guard against a search that never ends, which is what this pattern did
    slow = run_scribe(["log", "search", "(a|aa)+$"], workspace, env, timeout=120)
    assert slow.code == 2
    assert slow.err == ("scribe: the regular expression '(a|aa)+$' took more than 0.3 s of matching "
                        "(regex_timeout_s) and was stopped; it likely backtracks without end (nested or "
                        "overlapping repeats such as (a+)+ or (a|aa)+); write it more specifically\n")
