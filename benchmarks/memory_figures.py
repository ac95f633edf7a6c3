"""Observational memory on a tool-heavy session: cache efficiency, billed cost against a naive
agent, prompt bound, recall of a compressed detail."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from scribe.context.preview import OutputView
from scribe.context.render import render, render_messages
from scribe.log.events import (
    AssistantEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UserEvent,
)
from scribe.settings.values import Settings

from .bills import UNIT_READ, UNIT_WRITE, purpose_of
from .replay import prompt_tokens, replay, shared_prefix_tokens
from .sessions import coding

# A line of command output from turn 3, deep inside an output the prompt shows only as head and tail.
RECALL_QUERY = r"step 3 row +123 value"


@dataclass
class MemoryFigures:
    turns: int
    calls: dict[str, int]
    rejected_requests: int
    observations: int
    reflections: int
    prefix_read_share: float  # of the prefix each agent call shares with the one before, read from cache
    agent_read_share: float  # of agent prompt tokens from the 2nd call on, read from cache
    billed_input: float  # token units: uncached 1x, writes 1.25x, reads 0.1x, all purposes
    naive_input: int  # the same agent calls with compression off and no caching
    billed_vs_naive: float
    largest_prompt: int
    prompt_bound: int
    recall_exact: bool
    recalled_line: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(turns: int = 24, observe_tokens: int = 6000, reflect_tokens: int = 4000) -> MemoryFigures:
    session = coding("tool-heavy", turns)
    settings = Settings(permission_mode="full-auto", observe_tokens=observe_tokens, reflect_tokens=reflect_tokens)
    run = replay(session, settings, recall_fact=RECALL_QUERY)
    agent = [r for r in run.requests if purpose_of(r.json) == "agent"]

    shared = read_of_shared = 0
    for earlier, later in zip(agent, agent[1:], strict=False):
        s = shared_prefix_tokens(earlier.json, later.json)
        shared += s
        read_of_shared += min(s, later.usage["cache_read_input_tokens"])
    later_calls = [r.usage for r in agent[1:]]
    agent_read = sum(u["cache_read_input_tokens"] for u in later_calls)
    agent_prompt = sum(_prompt(u) for u in later_calls)
    billed = sum(r.usage["input_tokens"] + UNIT_WRITE * r.usage["cache_creation_input_tokens"]
                 + UNIT_READ * r.usage["cache_read_input_tokens"] for r in run.requests if r.usage)
    naive = naive_input(run.events)
    fixed = prompt_tokens({**agent[0].json, "messages": []})

    recalled, exact = _recall_check(run.events, agent)
    return MemoryFigures(
        turns=len(session.turns) + 1,
        calls={p: sum(1 for r in run.requests if purpose_of(r.json) == p) for p in ("agent", "observer", "reflector")},
        rejected_requests=sum(1 for r in run.requests if r.error or r.status != 200),
        observations=sum(isinstance(e, ObservationEvent) for e in run.events),
        reflections=sum(isinstance(e, ReflectionEvent) for e in run.events),
        prefix_read_share=read_of_shared / shared if shared else 0.0,
        agent_read_share=agent_read / agent_prompt if agent_prompt else 0.0,
        billed_input=round(billed, 1),
        naive_input=naive,
        billed_vs_naive=billed / naive if naive else 0.0,
        largest_prompt=max(_prompt(r.usage) for r in agent),
        prompt_bound=fixed + observe_tokens + reflect_tokens + largest_turn(run.events),
        recall_exact=exact,
        recalled_line=recalled,
    )


def _prompt(usage: dict[str, Any]) -> int:
    return usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]


def naive_input(events: list[Event]) -> int:
    """Prompt tokens of every agent call had nothing been compressed or cached."""
    full = [e for e in events if not isinstance(e, ObservationEvent | ReflectionEvent)]
    calls = [i for i, e in enumerate(full) if isinstance(e, AssistantEvent)]
    return sum(prompt_tokens(render(full[:i]).body()) for i in calls)


def largest_turn(events: list[Event]) -> int:
    """Tokens of the largest single user turn (its prompt, replies, tool calls and results)."""
    starts = [i for i, e in enumerate(events) if isinstance(e, UserEvent)] + [len(events)]
    largest = 0
    for a, b in zip(starts, starts[1:], strict=False):
        turn = [e for e in events[a:b] if not isinstance(e, ObservationEvent | ReflectionEvent)]
        header = events[0]
        assert isinstance(header, SessionEvent)
        messages = render_messages(turn, OutputView.of(header.recorded))
        largest = max(largest, prompt_tokens({"messages": messages}))
    return largest


def _recall_check(events: list[Event], agent_requests: list) -> tuple[str, bool]:  # type: ignore[type-arg]
    """The recall answer holds the exact line from the original output, which the prompt before
    it no longer showed."""
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    answer = next((e.output for e in reversed(results) if e.tool == "recall"), "")
    hit = next((line for line in answer.splitlines() if "step 3 row   123 value" in line), "")
    line = hit.split("] ", 1)[1] if "] " in hit else ""
    original = any(line and line in e.output.splitlines() for e in results if e.tool == "run_command")
    shown_before = str(agent_requests[-2].json) if len(agent_requests) > 1 else ""
    return line, bool(line) and original and line not in shown_before


TARGETS = {
    "prefix_read_share": (">=", 0.99),
    "agent_read_share": (">=", 0.85),
    "billed_vs_naive": ("<=", 0.15),
}


def verdicts(figures: MemoryFigures) -> dict[str, bool]:
    out = {name: (getattr(figures, name) >= goal if op == ">=" else getattr(figures, name) <= goal)
           for name, (op, goal) in TARGETS.items()}
    out["observer_and_reflector_ran"] = figures.calls["observer"] > 0 and figures.calls["reflector"] > 0
    out["every_request_valid"] = figures.rejected_requests == 0
    out["prompt_bounded"] = figures.largest_prompt <= figures.prompt_bound
    out["recall_exact"] = figures.recall_exact
    return out
