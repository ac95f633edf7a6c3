"""`!command` at the REPL's prompt: a shell command the person runs without the model, through
the same door as the model's run_command (the permission policy, the runner and its sandbox,
the redaction of its output), whose command and output join the conversation.

The permission mode decides as it does for run_command, since a command can do anything the
mode is there to limit: read-only refuses, ask and accept-edits ask (accept-edits accepts file
edits, not commands), full-auto runs; an "always" given to run_command holds here too.

What ran is logged as the person's input: a user event whose text says who ran what and holds
the output (its head and tail within PERSON_OUTPUT_CHARS: the person ran it to show it, so it
is not cut to a tool output's preview), so the model reads it with the next message and every
byte of that prompt comes from the log. Nothing is logged for a command that
was refused or declined. Ctrl-C ends the command; what it printed until then is kept.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from scribe.log.events import GitConfigEvent, UserEvent
from scribe.tools.base import CommandInterrupted, ToolOutput
from scribe.tools.registry import run_tool

from .loop import Agent
from .protocol import ToolCall

COMMAND_TOOL = "run_command"
# The most of a `!command`'s output the user event holds (head and tail).
PERSON_OUTPUT_CHARS = 12_000
HEADER = "[the person ran this shell command in the workspace with `!` (you did not run it); its output follows]"


class ShellRefused(Exception):
    """The permission mode does not run commands, or the person declined; nothing ran."""


@dataclass(frozen=True)
class ShellRan:
    command: str
    output: ToolOutput
    event: UserEvent


def run_shell(agent: Agent, command: str, *, how_to_allow: str = "/mode") -> ShellRan:
    """Run `command` as the person's own, under `agent`'s permission mode, and log it."""
    tool = next((t for t in agent.tools if t.name == COMMAND_TOOL), None)
    if tool is None:
        raise ShellRefused("this session has no run_command tool")
    args = {"command": command}
    mode = agent.policy.mode
    verdict = agent.policy.verdict(tool.name, tool.kind)
    if verdict == "deny":
        raise ShellRefused(f"!command runs nothing in permission mode {mode}; {how_to_allow} ask asks before "
                           f"each command, {how_to_allow} full-auto runs them")
    if verdict == "ask":
        if agent.approver is None:
            raise ShellRefused(f"permission mode {mode} asks before a command, and nothing here can ask")
        answer = agent.approver(ToolCall(f"shell-{agent.session.writer.next_seq}", tool.name, args,
                                         tool.summary(args)))
        if answer == "always":
            agent.policy.always.add(tool.name)
        elif not answer:
            raise ShellRefused("not run (declined)")
    acting = agent.watcher.command_running() if agent.watcher is not None else nullcontext()
    with acting:
        try:
            out = run_tool(agent.tools, tool.name, args, agent.context)
        except CommandInterrupted as stop:  # the person's Ctrl-C ends their command, not the session
            out = stop.output
    text = f"{HEADER}\n$ {agent.context.redact(command)}\n{head_and_tail(out.text, PERSON_OUTPUT_CHARS)}"
    event = agent.session.append(UserEvent, text=text)
    if out.git_config:  # shown with the output; the log says it in its own event too
        agent.session.append(GitConfigEvent, changes=out.git_config)
    agent.session.sync()
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
