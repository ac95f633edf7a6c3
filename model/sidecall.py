"""A side call's answer as the model gave it: the input of the forced tool when the model used
it, else its text.

Side calls (observer, reflector, curator) name one tool and force it (memory/answer_tools.py).
A server that ignores tools (llama.cpp for a chat template without them) answers text; a model
may also call the tool with input that does not fit. Either way the text blocks are what is
left, and the kind's text reader takes them as it always has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from scribe.context.render import Request
from scribe.log.events import Event, UsageEvent
from scribe.memory.answer import Answer, UnusableAnswer

from .client import CallResult

Via = Literal["tool", "text"]


def side_request(model: str, system: str, user: str, max_tokens: int, tool: dict[str, Any] | None) -> Request:
    """The request of one side call, forcing `tool` when given (`side_call_tools` off: None)."""
    return Request.one_shot(model, system, user, max_tokens, tool=tool)


def side_answer(result: CallResult, tool_name: str, as_text: Callable[[object], str]) -> tuple[Answer, Via]:
    """The answer to read and where it came from. The tool's input, written as text by `as_text`,
    wins when it is usable; otherwise the text blocks, if any; otherwise UnusableAnswer with
    what was wrong with the tool input."""
    text = "".join(b.get("text", "") for b in result.content if b.get("type") == "text")
    use = next((b for b in result.content if b.get("type") == "tool_use" and b.get("name") == tool_name), None)
    if use is None:
        return Answer(text, result.stop_reason), "text"
    try:
        written = as_text(use.get("input"))
    except UnusableAnswer:
        if text.strip():
            return Answer(text, result.stop_reason), "text"
        raise
    # A forced call stops with "tool_use"; what the reader must know is only whether it was cut.
    stop = result.stop_reason if result.stop_reason in ("max_tokens", "refusal") else "end_turn"
    return Answer(written, stop), "tool"


# A side call may take as long as the slowest of the agent's last few calls, and never less than
# this: a compression never takes longer than the turn it serves (a turn is at least one call),
# yet a fast API's calls of a second or two do not starve a side call of its usual few seconds.
DEADLINE_FLOOR_S = 20.0
RECENT_AGENT_CALLS = 3


def side_deadline(events: Sequence[Event]) -> float:
    """Seconds a side call may run before it is stopped and its answer counted unusable: the
    longest of the agent's last RECENT_AGENT_CALLS calls (their `latency_ms`), at least
    DEADLINE_FLOOR_S. On a local server that writes 45 tokens a second, a side call told to
    write no more than its budget rarely meets it; one that rambles past it is stopped here."""
    latencies: list[int] = []
    for event in reversed(events):
        if isinstance(event, UsageEvent) and event.purpose == "agent":
            latencies.append(event.latency_ms)
            if len(latencies) == RECENT_AGENT_CALLS:
                break
    return max(DEADLINE_FLOOR_S, max(latencies, default=0) / 1000)
