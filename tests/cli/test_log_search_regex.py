"""`scribe log search` bounds its regular-expression work like search_files and recall do:
the real executable, a real log, a pattern that would backtrack without end."""

from __future__ import annotations

from pathlib import Path

from helpers import run_scribe, scribe_env
from scribe.fakeapi import FakeMessagesServer, Reply, SideCallModel

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


def test_a_fact_in_the_notes_is_one_hit_per_event_not_one_per_session_curated_after_it(
        workspace: Path, home: Path) -> None:
    """Each curation writes the whole notes file into its `notes` event: the facts of earlier
    sessions are copies there, and are not hits again."""
    agent = SideCallModel([Reply.text(f"Noted {i}.") for i in range(6)])
    with FakeMessagesServer(agent) as server:
        env = scribe_env(server.base_url, home, SCRIBE_CURATE_NOTES="true")
        for i in range(4):  # each session is curated into the notes after its run
            assert run_scribe(["run", f"remember: the code word is PLUM{i}"], workspace, env).code == 0
        notes = run_scribe(["notes", "show"], workspace, env).out
        by_pattern = run_scribe(["log", "search", "PLUM0", "--all", "--json"], workspace, env).json()
        by_words = run_scribe(["log", "search", "-w", "plum0", "--all", "--json"], workspace, env).json()
    assert notes.count("PLUM") == 4
    for hits in (by_pattern, by_words):
        found = [(h["session_id"], h["seq"], h["type"]) for h in hits]
        assert len(found) == len(set(found)) == 2, hits  # its message, and its own notes event
        assert {t for _, _, t in found} == {"user", "notes"} and len({s for s, _, _ in found}) == 1
