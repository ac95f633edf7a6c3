"""Permission mode `ask`: before a write or a command, show what it would do and ask.

The preview is computed here, without running the tool: for edit_file the diff the edit would
make, for write_file the path and size (and the first lines), for run_command the command. It
uses the file tools' own checks (`plan_edit`, `plan_write`), so a call they will refuse (an
edit whose old_text matches 0 or 2 times, a refused path, a stale file) is not put to the
person: it runs, fails, and the model reads the error. The answer goes back to the core as a
Decision: allow (yes), decline (no: the model gets an error result saying the person declined),
allow_always (this tool runs without asking for the rest of the session), or allow_always with
the allow rules the person chose to keep instead: the exact command (or file, or domain), or a
broader one (the command's prefix, the file's folder), kept for the session or saved in their own
config or the workspace's, only where they say. A question an ask rule asks names the rule and
takes no "always": the rule asks every time.

Only a deliberate answer answers (question.py): `y` or `n` alone as the first key once the
question is up, or a whole word and Enter; `always` is a word only, never a key. No key typed
before the question was drawn, or on from then without a pause, answers it: those keys wait at
the next prompt (keys.py). A sentence typed at the question allows nothing: like
Claude Code's "No, and tell Claude what to do differently", the turn stops there and the
sentence waits at the prompt as the next message.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from scribe.agent.protocol import Decision, Offer, Question, ToolCall
from scribe.settings.files import ConfigError, user_config_path
from scribe.settings.rules import save_rule, save_workspace_rule, workspace_rule_path
from scribe.tools.base import ToolContext, ToolError
from scribe.tools.files import EditFile, WriteFile, plan_edit, plan_write
from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX
from scribe.tools.registry import check_args
from scribe.tools.textio import plural

from ..visible import visible
from .excerpts import Hanging, diff_text
from .input import InputArea
from .keys import Choice, TurnKeys
from .question import GUARD_S, Answers, ask
from .view import View, waiting_for_mcp

PREVIEW_LINES = 12
KEYS = {"y": "yes", "n": "no"}  # answers a single key gives; never "always"
WORDS = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "always": "always"}
ONCE_WORDS = {"y": "yes", "yes": "yes", "n": "no", "no": "no"}  # where an ask rule asks
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

    def ask(self, call: ToolCall, asked: Question, agent: str | None = None) -> tuple[Decision, Offer | None]:
        """The person's decision, and the rules they chose to keep after "always" (if any).
        `agent`: the sub-agent that asks, named above the question."""
        self.view.pause()  # stop the "running…" spinner: the question needs the terminal
        if agent is not None:
            self.view.note(f"  asked by sub-agent {visible(agent)}:")
        shown = preview(call, self.context)
        if shown.failure is not None:
            return Decision.ALLOW, None  # it would only be refused: let the tool say why, to the model
        if shown.text is not None:
            text = shown.text.copy()
            if not text.plain.endswith("\n"):
                text.append("\n")  # the question starts on a line of its own
            self.view.console.print(Hanging(text), end="")
            self.view.previewed.add(call.id)  # so the result need not repeat it
        name = visible(call.name)
        if asked.rule is not None:  # a rule asks every time: "always" would keep nothing
            self.view.note(f"  asked because {asked.why}" if asked.why else f"  asked by the {asked.rule.describe()}")
            choice = self._ask(f"  allow {name}? [y]es [n]o › ", Answers(KEYS, ONCE_WORDS, on_escape="no", meaning={}))
        else:
            choice = self._ask(f"  allow {name}? [y]es [n]o, or type always⏎ for this session › ",
                               Answers(KEYS, WORDS, on_escape="no",
                                       meaning={"always": f"no more questions about {name} this session"}))
        if choice.word == "message":
            # Not an answer: the person is saying something else. Nothing runs; the turn stops
            # (as Ctrl-C stops it) and what they typed is their next message, ready to send.
            self.area.draft = choice.message
            self.view.warn("  nothing allowed: the turn stops, and what you typed waits at the prompt")
            return Decision.STOP, None
        decision = VERDICT[choice.word]
        keep = self._always(call, asked) if decision is Decision.ALLOW_ALWAYS else None
        if choice.word != "no" and call.name == "run_command":
            self.view.running(call)
        elif choice.word != "no" and call.name.startswith(MCP_PREFIX):
            self.view.busy(waiting_for_mcp(call.summary))
        return decision, keep

    def _ask(self, question: str, answers: Answers) -> Choice:
        with self.keys.asking() as aside:
            guard_s = GUARD_S if self.keys.on_terminal() else 0.0  # a script's keys come at once
            choice = ask(question, answers, aside=aside, guard_s=guard_s)
            self.keys.answered(choice)
        return choice

    def _always(self, call: ToolCall, asked: Question) -> Offer | None:
        """After "always": the rules that would let this call run, offered to keep instead of
        allowing the whole tool, and where to keep the one chosen. Nothing is saved unless the
        person says where."""
        name = visible(call.name)
        if not asked.offers:
            if asked.unmatchable:
                self.view.note(f"  no rule can match this command line ({asked.unmatchable}): "
                               f"{name} runs without asking for the rest of this session")
            return None
        rules = {str(number): offer for number, offer in enumerate(asked.offers[:2], start=1)}
        self.view.lines([f"    {number}: {offer.text}" for number, offer in rules.items()])
        choice = self._ask(f"  keep a rule instead: {', '.join(rules)}, or s (all of {name}, this session only) › ",
                           Answers({**{k: k for k in rules}, "s": "session"},
                                   {**{k: k for k in rules}, "s": "session", "session": "session"},
                                   on_escape="session", meaning={"session": f"no more questions about {name}"}))
        offer = rules.get(choice.word)
        if offer is None:
            return None
        workspace = self.context.workspace
        user, own = user_config_path(), workspace_rule_path(workspace)
        self.view.lines([f"    u: your config, {user}", f"    w: this workspace's, {own}"], soft_wrap=True)
        choice = self._ask(f"  keep {visible(offer.text)} in: u, w, or s (this session only) › ",
                           Answers({"u": "user", "w": "workspace", "s": "session"},
                                   {"u": "user", "user": "user", "w": "workspace", "workspace": "workspace",
                                    "s": "session", "session": "session"},
                                   on_escape="session", meaning={"session": "kept until this session ends"}))
        if choice.word == "session":
            self.view.note(f"  kept for this session: {offer.text}")
            return offer
        try:
            if choice.word == "user":
                for rule in offer.rules:
                    save_rule(user, rule)
                where = user
            else:
                for rule in offer.rules:
                    where = save_workspace_rule(workspace, rule)
        except ConfigError as exc:
            self.view.warn(f"  not saved: {exc}; kept for this session only")
            return offer
        self.view.note(f"  saved the allow rule{'s' if len(offer.rules) > 1 else ''} {offer.text} to {where}")
        return offer.kept_in(str(where))
