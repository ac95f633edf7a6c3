"""The REPL's own kinds of line besides commands and messages: `!command` runs a shell command
(agent/shell.py), and `@path` in a message attaches the file (agent/attach.py). This module
parses those lines and shows what happened; the agent side does the work and the logging."""

from __future__ import annotations

from rich.text import Text

from scribe.agent.attach import Attached, attach
from scribe.agent.loop import Agent
from scribe.agent.shell import ShellRefused, run_shell

from ..visible import visible
from .excerpts import fold
from .view import RUNNING, View


def shell_command(line: str) -> str | None:
    """The command of a `!command` line, "" for a lone `!`, None for any other line (`!!`
    sends a message that starts with one `!`, as `//` does for `/`)."""
    text = line.strip()
    if not text.startswith("!") or text.startswith("!!"):
        return None
    return text[1:].strip()


def run_bang(agent: Agent, view: View, command: str, how_to_allow: str) -> None:
    """Run a `!command` and show its output, or say in one line why it did not run."""
    if not command:
        view.error("! needs a command after it: !git status runs `git status` (!! starts a message with !)")
        return
    view.busy(RUNNING)
    try:
        ran = run_shell(agent, command, how_to_allow=how_to_allow)
    except ShellRefused as exc:
        view.error(str(exc))
        return
    finally:
        view.pause()
    head, tail, hidden = fold(visible(ran.output.text))
    text = Text()
    for line in head:
        text.append(f"  │ {line}\n", style="dim")
    if hidden:
        text.append(f"  │ … {hidden} more line{'s' if hidden != 1 else ''} …\n", style="italic dim")
    for line in tail:
        text.append(f"  │ {line}\n", style="dim")
    view.console.print(text, end="")
    view.note("(the command and its output go to the model with your next message)")


def with_attachments(agent: Agent, view: View, message: str) -> Attached:
    """`message` with the files its `@path` words name attached, and the images it attaches;
    each is named on screen."""
    attached = attach(message, agent.context)
    for file in attached.files:
        view.note(file.describe())
    for image in attached.images:
        view.note(image.describe())
    for refusal in attached.refused:
        view.warn(refusal)
    return attached
