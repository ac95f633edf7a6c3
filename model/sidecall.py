"""A side call's answer as the model gave it: the input of the forced tool when the model used
it, else its text.

Side calls (observer, reflector, curator) name one tool and force it (memory/answer_tools.py).
A server that ignores tools (llama.cpp for a chat template without them) answers text; a model
may also call the tool with input that does not fit. Either way the text blocks are what is
left, and the kind's text reader takes them as it always has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from scribe.context.render import Request
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
