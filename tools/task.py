"""The `task` tool: what the model calls to hand a piece of work to a sub-agent, a session of its
own with a context of its own. This is its definition, as the model sees it; the agent's loop
runs the calls (agent/task.py opens each sub-agent through the agent core), several at once when
one answer makes several."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput

DESCRIPTION = """\
Hand a self-contained piece of work to a sub-agent: a session of its own that starts with an \
empty context, works with the tools it is given, and answers once, when it is done. Use it for \
work that would fill your own context (reading or searching many files, a long investigation) or \
that splits into independent parts: several task calls in one answer run at the same time. The \
sub-agent sees only `prompt`, so say everything it needs (paths, names, what to look for, what \
to return). Its final answer is the result you get: ask for the findings themselves (file paths, \
lines, exact text), not a summary of what it did. Its whole work stays in its own log."""


class Task:
    name = "task"
    kind: ToolKind = "task"

    def __init__(self, agents: Sequence[tuple[str, str]]) -> None:
        """`agents`: the kinds of sub-agent there are, as (name, description), `general` first."""
        listed = "\n".join(f"- {name}: {description}" for name, description in agents)
        self.description = f"{DESCRIPTION}\n\nSub-agents (`agent`):\n{listed}"
        self.input_schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A few words naming the work (shown to the user)."},
                "prompt": {"type": "string", "description": "The whole task, as the sub-agent will read it."},
                "agent": {"type": "string", "enum": [name for name, _ in agents],
                          "description": "Which sub-agent does it (default: general)."},
            },
            "required": ["description", "prompt"],
            "additionalProperties": False,
        }

    def summary(self, args: dict[str, Any]) -> str:
        return f"{args.get('agent') or 'general'}: {str(args.get('description', '')).strip()[:100]}"

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise ToolError("task calls are run by the agent's loop, which opens their sub-agents")
