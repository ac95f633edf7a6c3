"""The REPL's side of the habits people bring from other agents: a message a slash command sends
(a custom command's text, `/init`'s instruction), the question before `/init` replaces an
AGENTS.md, and the task list on screen.

A command that sends a message hands back a `Send`; the REPL runs it as a turn once the command
has returned, and the user event records which command made it (`command` in the log), while
the model sees only the text, as if typed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from scribe.settings.commands import CommandSet, CustomCommand, expand
from scribe.tools.todo import TodoItem, progress

from ..visible import visible
from .keys import TurnKeys
from .question import GUARD_S, Answers, ask

AGENTS_MD = "AGENTS.md"
# /init's message: fixed text, so every /init asks the same, and the log says it was /init.
INIT_PROMPT = (
    "Write an AGENTS.md file at the root of this repository: the instructions a coding agent reads before "
    "working here. Look around first (list_files, read_file on the README, the build and test configuration, "
    "a few source files; run_command only if it is needed to learn how to build or test). Then write it with "
    "write_file, short and specific to this repository: what the project is, how it is laid out, the exact "
    "commands to install, build, test and lint, the conventions the code follows, and anything a newcomer "
    "would get wrong. No generic advice."
)
INIT_REPLACE = (" An AGENTS.md exists already: read it first, keep what is still true and specific, and "
                "replace the file with the better version.")
# Marks of the task list on screen.
MARKS = {"pending": "☐", "in_progress": "▶", "done": "✔"}
STYLES = {"pending": "", "in_progress": "bold", "done": "dim"}


@dataclass(frozen=True)
class Send:
    """A message a command sends, and what the log records of the command that made it."""

    text: str
    command: dict[str, Any] = field(default_factory=dict)


def custom_send(command: CustomCommand, arguments: str) -> Send:
    origin: dict[str, Any] = {"name": command.name, "file": command.source}
    if arguments.strip():
        origin["arguments"] = arguments.strip()
    return Send(expand(command, arguments), origin)


def untrusted_line(commands: CommandSet, name: str) -> str | None:
    """The one line for a workspace's command left unused because the workspace is not trusted."""
    file = commands.untrusted.get(name)
    if file is None:
        return None
    return (f"/{name} is this workspace's command ({file}), ignored: the workspace is not trusted; "
            "`scribe trust` applies its commands")


def help_lines(commands: CommandSet, width: int) -> list[str]:
    """/help's lines for the custom commands."""
    lines = []
    for name, command in sorted(commands.commands.items()):
        usage = f"/{name} {command.argument_hint}".strip()
        lines.append(f"  {usage:<{width + 1}} {command.help_line()}")
    return lines


def confirm_replace(keys: TurnKeys) -> bool:
    """Asked before /init replaces an AGENTS.md: only a deliberate yes replaces it."""
    answers = Answers({"y": "yes", "n": "no"}, {"y": "yes", "yes": "yes", "n": "no", "no": "no"}, on_escape="no",
                      meaning={})
    with keys.asking() as aside:
        choice = ask(f"  {AGENTS_MD} exists; replace it with a new one? [y]es [n]o › ", answers, aside=aside,
                     guard_s=GUARD_S if keys.on_terminal() else 0.0)
        keys.answered(choice)
    return choice.word == "yes"


def init_send(exists: bool) -> Send:
    return Send(INIT_PROMPT + (INIT_REPLACE if exists else ""), {"name": "init"})


def todo_text(items: Sequence[TodoItem]) -> Text:
    """The task list as the REPL shows it: a heading with the progress, one line per item."""
    text = Text()
    if not items:
        text.append("  tasks: cleared\n", style="dim")
        return text
    text.append(f"  tasks ({visible(progress(items))})\n", style="dim")
    for item in items:
        text.append(f"  {MARKS[item.status]} {visible(item.text)}\n", style=STYLES[item.status])
    return text


def working_on(items: Sequence[TodoItem] | None) -> str | None:
    """The item in progress, for the spinner's label."""
    return next((i.text for i in items or () if i.status == "in_progress"), None)
