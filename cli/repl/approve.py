"""Permission mode `ask`: before a write or a command, show what it would do and ask.

The preview is computed here, without running the tool: for edit_file the diff the edit would
make, for write_file the path and size (and the first lines), for run_command the command. The
answer goes back to the agent loop: True (yes), False (no: the model gets an error result
saying the person declined) or "always" (this tool runs without asking for the rest of the
session).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any

from rich.text import Text

from scribe.agent.protocol import ToolCall
from scribe.tools.base import ToolContext, ToolError
from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX
from scribe.tools.paths import display_path, resolve_path
from scribe.tools.textio import plural

from .input import InputArea
from .view import View, diff_text

PREVIEW_LINES = 12
ANSWERS = {"y": "yes", "n": "no", "a": "always"}
VERDICT: dict[str, bool | str] = {"yes": True, "no": False, "always": "always"}


def preview(call: ToolCall, ctx: ToolContext) -> Text | None:
    """What the call would do, as the person should see it before saying yes (None when the
    tool line already said it all)."""
    args: dict[str, Any] = call.args
    if call.name == "run_command":
        command = str(args.get("command", ""))
        if command.strip() == call.summary and "timeout_s" not in args:
            return None  # the tool line above already shows the whole command
        text = Text()
        for line in command.splitlines():
            text.append(f"  $ {line}\n", style="bold")
        if "timeout_s" in args:
            text.append(f"  (timeout {args['timeout_s']} s)\n", style="dim")
        return text
    if call.name.startswith(MCP_PREFIX):
        return _mcp_preview(call)
    if call.name == "edit_file":
        return _edit_preview(args, ctx)
    if call.name == "write_file":
        return _write_preview(args, ctx)
    return None


def _mcp_preview(call: ToolCall) -> Text:
    """An MCP call: which server and tool (the summary says, exactly) and every argument."""
    server, _, tool = call.summary.partition(" · ")
    text = Text(f"  MCP server {server}, tool {tool.split(' ', 1)[0]}\n", style="bold")
    lines = json.dumps(call.args, ensure_ascii=False, indent=2).splitlines() if call.args else ["(no arguments)"]
    for line in lines[:PREVIEW_LINES]:
        text.append(f"    {line}\n")
    if len(lines) > PREVIEW_LINES:
        text.append(f"    … {len(lines) - PREVIEW_LINES} more lines\n", style="dim")
    return text


def _edit_preview(args: dict[str, Any], ctx: ToolContext) -> Text:
    path, old, new = str(args.get("path", "")), str(args.get("old_text", "")), str(args.get("new_text", ""))
    try:
        target = resolve_path(ctx, path, write=True)
        before = target.read_text(encoding="utf-8", errors="replace")
    except (ToolError, OSError) as exc:
        return Text(f"  (the edit will fail: {exc})", style="yellow")
    name = display_path(ctx, target)
    count = before.count(old) if old else 0
    if count != 1:
        return Text(f"  (the edit will fail: old_text matches {count} times in {name})", style="yellow")
    after = before.replace(old, new, 1)
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), n=3, lineterm="")
    return diff_text("\n".join(line for line in diff if not line.startswith(("---", "+++"))))


def _write_preview(args: dict[str, Any], ctx: ToolContext) -> Text:
    path, content = str(args.get("path", "")), str(args.get("content", ""))
    try:
        target = resolve_path(ctx, path, write=True)
    except ToolError as exc:
        return Text(f"  (the write will fail: {exc})", style="yellow")
    lines = content.splitlines()
    size = len(content.encode("utf-8", errors="replace"))
    verb = "overwrites" if target.exists() else "creates"
    text = Text(f"  {verb} {display_path(ctx, target)}: {plural(len(lines), 'line')}, "
                f"{plural(size, 'byte')}\n", style="bold")
    for line in lines[:PREVIEW_LINES]:
        text.append(f"    {line}\n", style="green")
    if len(lines) > PREVIEW_LINES:
        text.append(f"    … {len(lines) - PREVIEW_LINES} more lines\n", style="dim")
    return text


class Approver:
    """The Agent's `approver` callback for the REPL."""

    def __init__(self, view: View, area: InputArea, context: Callable[[], ToolContext]) -> None:
        # `context` is read at each call: the REPL builds a new agent (and context) per session.
        self.view, self.area, self.context = view, area, context

    def __call__(self, call: ToolCall) -> bool | str:
        self.view.pause()  # stop the "running…" spinner: the question needs the terminal
        shown = preview(call, self.context())
        if shown is not None:
            self.view.console.print(shown, end="")
            self.view.previewed.add(call.id)  # so the result need not repeat it
        word = self.area.choose(f"  allow {call.name}? [y]es [n]o [a]lways for this session › ", ANSWERS,
                                on_escape="n")
        if word != "no" and call.name == "run_command":
            self.view.busy("running…  (Ctrl-C cancels)")
        elif word != "no" and call.name.startswith(MCP_PREFIX):
            self.view.busy(f"waiting for MCP server {call.summary.split(' · ')[0]}…  (Ctrl-C cancels)")
        return VERDICT[word]
