"""Permission mode `ask`: before a write or a command, show what it would do and ask.

The preview is computed here, without running the tool: for edit_file the diff the edit would
make, for write_file the path and size (and the first lines), for run_command the command. It
uses the file tools' own checks (`plan_edit`, `plan_write`), so a call they will refuse (an
edit whose old_text matches 0 or 2 times, a refused path, a stale file) is not put to the
person: it runs, fails, and the model reads the error. The answer goes back to the core as a
Decision: allow (yes), decline (no: the model gets an error result saying the person declined) or
allow_always (this tool runs without asking for the rest of the session).

Only a deliberate answer answers (question.py): `y` or `n` alone as the first key once the
question is up, or a whole word and Enter; `always` is a word only, never a key. No key typed
before the question was drawn, or on from then without a pause, answers it (keys.py). A sentence typed at the question allows nothing: like
Claude Code's "No, and tell Claude what to do differently", the turn stops there and the
sentence waits at the prompt as the next message.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from scribe.agent.protocol import Decision, ToolCall
from scribe.tools.base import ToolContext, ToolError
from scribe.tools.files import EditFile, WriteFile, plan_edit, plan_write
from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX
from scribe.tools.registry import check_args
from scribe.tools.textio import plural

from ..visible import visible
from .excerpts import Hanging, diff_text
from .input import InputArea
from .keys import TurnKeys
from .question import GUARD_S, Answers, ask
from .view import RUNNING, View, waiting_for_mcp

PREVIEW_LINES = 12
KEYS = {"y": "yes", "n": "no"}  # answers a single key gives; never "always"
WORDS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "always": "always"}
VERDICT = {"yes": Decision.ALLOW, "no": Decision.DECLINE, "always": Decision.ALLOW_ALWAYS}


@dataclass(frozen=True)
class Preview:
    """What a call would do, as the person should see it before saying yes (`text`, None when
    the tool line already said it all), or why the tool will refuse it (`failure`)."""

    text: Text | None = None
    failure: str | None = None


def preview(call: ToolCall, ctx: ToolContext) -> Preview:
    args: dict[str, Any] = call.args
    if call.name == "run_command":
        command = str(args.get("command", ""))
        if command.strip() == call.summary and "timeout_s" not in args:
            return Preview()  # the tool line above already shows the whole command
        text = Text()
        for line in visible(command).splitlines():
            text.append(f"  $ {line}\n", style="bold")
        if "timeout_s" in args:
            text.append(f"  (timeout {visible(str(args['timeout_s']))} s)\n", style="dim")
        return Preview(text)
    if call.name.startswith(MCP_PREFIX):
        return _mcp_preview(call)
    if call.name == "edit_file":
        return _edit_preview(args, ctx)
    if call.name == "write_file":
        return _write_preview(args, ctx)
    return Preview()


def _mcp_preview(call: ToolCall) -> Preview:
    """An MCP call: which server and tool (its summary says, exactly) and every argument."""
    server, _, tool = call.summary.partition(" · ")
    text = Text(f"  MCP server {visible(server)}, tool {visible(tool.split(' ', 1)[0])}\n", style="bold")
    lines = json.dumps(call.args, ensure_ascii=False, indent=2).splitlines() if call.args else ["(no arguments)"]
    for line in lines[:PREVIEW_LINES]:
        text.append(f"    {visible(line)}\n")
    if len(lines) > PREVIEW_LINES:
        text.append(f"    … {plural(len(lines) - PREVIEW_LINES, 'more line')}\n", style="dim")
    return Preview(text)


def _edit_preview(args: dict[str, Any], ctx: ToolContext) -> Preview:
    problem, clean = check_args(EditFile(), args)
    if problem is not None:
        return Preview(failure=problem)
    try:
        plan = plan_edit(clean, ctx)
    except (ToolError, OSError, UnicodeError) as exc:
        return Preview(failure=str(exc))
    diff = difflib.unified_diff(plan.before.splitlines(), plan.after.splitlines(), n=3, lineterm="")
    return Preview(diff_text("\n".join(line for line in diff if not line.startswith(("---", "+++")))))


def _write_preview(args: dict[str, Any], ctx: ToolContext) -> Preview:
    problem, clean = check_args(WriteFile(), args)
    if problem is not None:
        return Preview(failure=problem)
    try:
        plan = plan_write(clean, ctx)
    except (ToolError, OSError, UnicodeError) as exc:
        return Preview(failure=str(exc))
    lines = str(clean["content"]).splitlines()
    verb = "overwrites" if plan.existed else "creates"
    text = Text(f"  {verb} {visible(plan.name)}: {plural(len(lines), 'line')}, "
                f"{plural(len(plan.data), 'byte')}\n", style="bold")
    for line in lines[:PREVIEW_LINES]:
        text.append(f"    {visible(line)}\n", style="green")
    if len(lines) > PREVIEW_LINES:
        text.append(f"    … {plural(len(lines) - PREVIEW_LINES, 'more line')}\n", style="dim")
    return Preview(text)


class PersonApprover:
    """The REPL's answer to an approval request (agent/protocol.py): it asks the person."""

    def __init__(self, view: View, area: InputArea, context: ToolContext, keys: TurnKeys) -> None:
        self.view, self.area, self.context, self.keys = view, area, context, keys

    def ask(self, call: ToolCall) -> Decision:
        self.view.pause()  # stop the "running…" spinner: the question needs the terminal
        shown = preview(call, self.context)
        if shown.failure is not None:
            return Decision.ALLOW  # it would only be refused: let the tool say why, to the model
        if shown.text is not None:
            text = shown.text.copy()
            if not text.plain.endswith("\n"):
                text.append("\n")  # the question starts on a line of its own
            self.view.console.print(Hanging(text), end="")
            self.view.previewed.add(call.id)  # so the result need not repeat it
        name = visible(call.name)
        question = f"  allow {name}? [y]es [n]o, or type always⏎ for this session › "
        answers = Answers(KEYS, WORDS, on_escape="no",
                          meaning={"always": f"no more questions about {name} this session"})
        with self.keys.asking() as discard:
            guard_s = GUARD_S if self.keys.on_terminal() else 0.0  # a script's keys come at once
            choice = ask(question, answers, discard=discard, guard_s=guard_s)
            self.keys.answered(choice)
        if choice.word == "message":
            # Not an answer: the person is saying something else. Nothing runs; the turn stops
            # (as Ctrl-C stops it) and what they typed is their next message, ready to send.
            self.area.draft = choice.message
            self.view.warn("  nothing allowed: the turn stops, and what you typed waits at the prompt")
            return Decision.STOP
        if choice.word != "no" and call.name == "run_command":
            self.view.busy(RUNNING)
        elif choice.word != "no" and call.name.startswith(MCP_PREFIX):
            self.view.busy(waiting_for_mcp(call.summary))
        return VERDICT[choice.word]
