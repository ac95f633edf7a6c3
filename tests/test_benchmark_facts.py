"""The cost benchmark's definition of a kept fact (benchmarks/bills.py): the probe turn's prompt
shows it, or the model's own recall call in that turn returned it and its reply states it. The
raw log having it is never enough."""

from __future__ import annotations

from typing import Any

from benchmarks.bills import kept_facts
from benchmarks.sessions import PROBE, Fact
from scribe.log.events import AssistantEvent, Event, ToolResultEvent, UserEvent

FACT = Fact("error", "checksum mismatch in block 77 (E1042)", "ledger check failed")


def body(*texts: str) -> dict[str, Any]:
    return {"system": [{"type": "text", "text": "You are scribe."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": t} for t in texts]}]}


def log(recall_output: str, reply: str) -> list[Event]:
    early = ToolResultEvent(seq=1, ts="t", tool_use_id="a", tool="run_command", output=f"failed: {FACT.text}")
    return [early, UserEvent(seq=2, ts="t", text=PROBE),
            AssistantEvent(seq=3, ts="t", content=[{"type": "tool_use", "id": "r", "name": "recall",
                                                    "input": {"query": FACT.cue}}], stop_reason="tool_use"),
            ToolResultEvent(seq=4, ts="t", tool_use_id="r", tool="recall", output=recall_output),
            AssistantEvent(seq=5, ts="t", content=[{"type": "text", "text": reply}], stop_reason="end_turn")]


def test_a_fact_in_the_probe_prompt_is_kept_but_not_one_after_the_question() -> None:
    assert kept_facts([FACT], body(f"earlier: {FACT.text}", PROBE)).in_prompt == ["error"]
    assert kept_facts([FACT], body(PROBE, f"later: {FACT.text}")).count == 0


def test_the_raw_log_having_it_is_not_enough_recall_must_return_it_and_the_reply_say_it() -> None:
    prompt = body(PROBE)
    assert kept_facts([FACT], prompt, log("no matches", "I could not find it.")).count == 0
    assert kept_facts([FACT], prompt, log(f"[seq 1] {FACT.text}", "I could not find it.")).count == 0
    assert kept_facts([FACT], prompt, log(f"[seq 1] {FACT.text}", f"It failed with {FACT.text}.")).recalled == ["error"]
