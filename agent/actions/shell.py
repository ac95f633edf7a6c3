"""`!command` at the REPL's prompt: a shell command the person runs without the model, through
the same runner as the model's run_command (its sandbox, its limits, the redaction of its output),
whose command and output join the conversation.

It is the person's own command, so nothing asks about it (as in Claude Code's `!`): the person
could type it in their own terminal anyway. What refuses a command refuses it still (a deny rule,
read-only mode: agent/core.py checks), and it runs in the sandbox, as every command scribe starts
does.

What ran is logged as the person's input: a user event whose text says who ran what and holds
the output (as much as a tool result shows, head and tail), so the model reads it with the next
message and every byte of that prompt comes from the log. Ctrl-C ends the command; what it printed
until then is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from scribe.agent.session.session import Session
from scribe.log.events import GitConfigEvent, UserEvent
from scribe.tools.base import CommandInterrupted, Tool, ToolContext, ToolOutput
from scribe.tools.registry import run_tool
from scribe.workspace.watcher.changes import ChangeSource

COMMAND_TOOL = "run_command"
# The most of a `!command`'s output the user event holds (head and tail): the person ran it to
# show it, so it is not cut to a tool output's preview.
PERSON_OUTPUT_CHARS = 12_000
HEADER = "[the person ran this shell command in the workspace with `!` (you did not run it); its output follows]"


class ShellRefused(Exception):
    """The session has no command tool; nothing ran."""


@dataclass(frozen=True)
class ShellRan:
    command: str
    output: ToolOutput
    event: UserEvent


def run_shell(command: str, *, tools: Sequence[Tool], context: ToolContext, session: Session,
              watcher: ChangeSource | None) -> ShellRan:
    """Run `command` as the person's own, in the session's sandbox, and log it."""
    tool = next((t for t in tools if t.name == COMMAND_TOOL), None)
    if tool is None:
        raise ShellRefused("this session has no run_command tool")
    args = {"command": command}
    acting = watcher.command_running() if watcher is not None else nullcontext()
    with acting:
        try:
            out = run_tool(list(tools), tool.name, args, context)
        except CommandInterrupted as stop:  # the person's Ctrl-C ends their command, not the session
            out = stop.output
    text = f"{HEADER}\n$ {context.redact(command)}\n{head_and_tail(out.text, PERSON_OUTPUT_CHARS)}"
    # `shell`: the command alone (what telemetry may export of it: never the output).
    event = session.append(UserEvent, text=text, shell=context.redact(command))
    if out.git_config:  # shown with the output; the log says it in its own event too
        session.append(GitConfigEvent, changes=out.git_config)
    session.sync()
    return ShellRan(command, out, event)


def head_and_tail(text: str, limit: int) -> str:
    """`text`, or its first and last lines within `limit` characters with a line saying how
    much was left out between them."""
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 5].rpartition("\n")[0]
    tail = text[-(limit * 3 // 5):].partition("\n")[2]
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n[… {left_out:,} characters of output left out here …]\n{tail}"
