"""tool_use / tool_result pairing, checked over merged turns as the real API does.

The API merges consecutive same-role messages into one turn before checking, so
`[assistant(tool_use), user(tool_result), user(text)]` is fine while
`[assistant(tool_use), user(text), user(tool_result)]` is not: results must open
the turn that immediately follows the tool calls. Run after the shape checks, so
every block here is a well-formed dict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .problems import InvalidRequest

__all__ = ["check_tool_pairing"]


@dataclass
class _Turn:
    role: str
    first_message: int
    # (message index, block index, block) so errors can point at the original position
    blocks: list[tuple[int, int, dict[str, Any]]] = field(default_factory=list)


def _turns(messages: list[dict[str, Any]]) -> list[_Turn]:
    """The user and assistant turns; a system message (it sits between a user message and an
    assistant one, validate.py holds that) is no part of the pairing."""
    turns: list[_Turn] = []
    for i, message in enumerate(messages):
        if message["role"] == "system":
            continue
        if not turns or turns[-1].role != message["role"]:
            turns.append(_Turn(message["role"], i))
        content = message["content"]
        if isinstance(content, list):
            turns[-1].blocks.extend((i, j, block) for j, block in enumerate(content))
    return turns


def check_tool_pairing(messages: list[dict[str, Any]]) -> None:
    """Raise `InvalidRequest` unless every tool_use is answered right after, and only then."""
    turns = _turns(messages)
    seen_ids: set[str] = set()
    for t, turn in enumerate(turns):
        if turn.role == "assistant":
            for i, j, block in turn.blocks:
                if block["type"] != "tool_use":
                    continue
                if block["id"] in seen_ids:
                    raise InvalidRequest(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
                seen_ids.add(block["id"])
            _check_answered(turn, turns[t + 1] if t + 1 < len(turns) else None)
        else:
            previous = turns[t - 1] if t > 0 else None
            _check_results(turn, previous)


def _tool_use_ids(turn: _Turn | None) -> list[tuple[int, str]]:
    if turn is None:
        return []
    return [(i, block["id"]) for i, _, block in turn.blocks if block["type"] == "tool_use"]


def _check_answered(assistant: _Turn, following: _Turn | None) -> None:
    uses = _tool_use_ids(assistant)
    if not uses:
        return
    answered = set()
    if following is not None:
        answered = {b["tool_use_id"] for _, _, b in following.blocks if b["type"] == "tool_result"}
    missing = [(i, tool_id) for i, tool_id in uses if tool_id not in answered]
    if missing:
        ids = ", ".join(tool_id for _, tool_id in missing)
        raise InvalidRequest(
            f"messages.{missing[0][0]}: `tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
            "message."
        )


def _check_results(user: _Turn, previous: _Turn | None) -> None:
    expected = {tool_id for _, tool_id in _tool_use_ids(previous)}
    answered: set[str] = set()
    other: tuple[int, int, str] | None = None
    for i, j, block in user.blocks:
        if block["type"] != "tool_result":
            if other is None:
                other = (i, j, block["type"])
            continue
        tool_id = block["tool_use_id"]
        if tool_id not in expected:
            raise InvalidRequest(
                f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {tool_id}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            )
        if tool_id in answered:
            raise InvalidRequest(
                f"messages.{i}.content.{j}: each `tool_use` id may have only one `tool_result` block: {tool_id}"
            )
        answered.add(tool_id)
        if other is not None:
            oi, oj, kind = other
            raise InvalidRequest(
                f"messages.{i}.content.{j}: `tool_result` blocks must come first in the user message that "
                f"follows `tool_use` blocks, but a `{kind}` block comes before it at messages.{oi}.content.{oj}."
            )
