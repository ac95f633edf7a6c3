"""The REPL's own kinds of line besides commands and messages: `!command` runs a shell command
(the core's RunShell: agent/actions/shell.py), and `@path` in a message attaches the file
(agent/actions/attach.py). This module parses those lines; the agent side does the work and the
logging."""

from __future__ import annotations

from scribe.agent.actions.attach import Attached, attach
from scribe.tools.base import ToolContext

from .view import View


def shell_command(line: str) -> str | None:
    """The command of a `!command` line, "" for a lone `!`, None for any other line (`!!`
    sends a message that starts with one `!`, as `//` does for `/`)."""
    text = line.strip()
    if not text.startswith("!") or text.startswith("!!"):
        return None
    return text[1:].strip()


def with_attachments(context: ToolContext, view: View, message: str) -> Attached:
    """`message` with the files its `@path` words name attached, and the images it attaches;
    each is named on screen."""
    attached = attach(message, context)
    for file in attached.files:
        view.note(file.describe())
    for image in attached.images:
        view.note(image.describe())
    for refusal in attached.refused:
        view.warn(refusal)
    return attached
