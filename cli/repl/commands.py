"""Slash commands: a registry of name -> handler with its help line, and the dispatcher.

Which lines are commands (the rule docs/interactive.md states):
- a line whose first word is `/` followed by a name with no further `/` is a command, in any
  case (`/help`, `/HELP`, `/exit_now`, `/x.y`); one that is not known is never sent to the
  model: it is refused with the nearest known names;
- a line whose first word holds another `/` is a message: a path (`/usr/bin/env is broken`);
- a line starting with `//` is a message that starts with one `/` (`//help me` sends `/help me`),
  and one starting with `!!` a message that starts with one `!` (a lone `!` runs a shell command:
  shell.py).

Handlers get the REPL and the rest of the line. Every argument is checked: a command that takes
none refuses one, and a value that does not fit is refused with one line saying what would.
Expected failures (a session that is locked or unknown, a bad config value, git missing) become
one error line too. A command that sends a message (a custom command from a markdown file,
settings/commands.py; `/init`) returns it as a `Send`, which the REPL runs as a turn.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from scribe.agent.core import Agent
from scribe.agent.protocol import (
    Compact,
    CurateNotes,
    ModelSwitched,
    NewSession,
    Resume,
    SetMode,
    Submission,
    SwitchModel,
    Undo,
)
from scribe.agent.session.session import Session
from scribe.log.jsonl import LogError
from scribe.model.errors import ClientSetupError, ModelError
from scribe.settings.commands import CommandSet
from scribe.settings.files import ConfigError
from scribe.settings.values import PERMISSION_MODES, PermissionMode, Settings
from scribe.tools.textio import plural
from scribe.tools.todo import todos_in

from .excerpts import Hanging, diff_text
from .habits import (
    AGENTS_MD,
    Send,
    confirm_replace,
    custom_send,
    help_lines,
    init_send,
    todo_text,
    untrusted_line,
)
from .keys import TurnKeys
from .records import session_summaries
from .stats import Numbers, stats_lines
from .view import View


class Repl(Protocol):
    """What a slash command may use of the interactive session (cli/repl/repl.py's Repl). A
    protocol, so the commands need not import the loop that dispatches them. What changes the
    session goes to the agent core as a submission (`run`); the rest reads the log."""

    workspace: Path
    view: View
    keys: TurnKeys
    # The custom commands of this REPL (settings/commands.py).
    custom: CommandSet

    @property
    def agent(self) -> Agent: ...
    @property
    def session(self) -> Session: ...
    @property
    def settings(self) -> Settings: ...
    def numbers(self) -> Numbers: ...
    def refresh(self) -> None: ...
    def run(self, submission: Submission) -> None: ...


Handler = Callable[[Repl, str], Send | None]
_COMMAND = re.compile(r"^/([^/\s]*)(?:\s+(.*))?$", re.DOTALL)
RESUME_LIST = 10  # sessions /resume lists
EXPECTED = (LogError, ConfigError, ModelError, ClientSetupError, OSError)


class ExitRepl(Exception):
    """/exit: leave the loop normally."""


class Refused(Exception):
    """An argument a command cannot use; the message says what it takes."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Handler
    usage: str = ""  # "" takes no argument; "[WORD]" an optional single word; "[WORDS...]" any text

    def check(self, arg: str) -> None:
        if not self.usage and arg:
            raise Refused(f"/{self.name} takes no arguments (got {arg!r})")
        if len(arg.split()) > 1 and not self.usage.endswith("...]"):
            raise Refused(f"/{self.name} takes one word at most: /{self.name} {self.usage}")


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, usage: str = "") -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = Command(name, help, handler, usage)
        return handler
    return register


def command_help(custom: CommandSet | None = None) -> dict[str, str]:
    """name -> help line, for completion: the built-in commands, then the custom ones."""
    found = {name: c.help for name, c in COMMANDS.items()}
    for name, command in sorted((custom.commands if custom else {}).items()):
        found.setdefault(name, command.help_line())
    return found


def message_of(line: str) -> str | None:
    """The message a line sends to the model, or None when it is a slash command."""
    text = line.lstrip()
    if text.startswith(("//", "!!")):
        return text[1:]
    return None if _COMMAND.match(text.rstrip()) else line


def nearest(name: str, custom: CommandSet | None = None) -> str:
    """`did you mean /x?`, or where to look."""
    names = [*COMMANDS, *(custom.commands if custom else ())]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    if not close:  # a prefix or a longer spelling: /HELP2, /exit_now
        close = [c for c in names if name.startswith(c) or (name and c.startswith(name))][:3]
    return f"did you mean {', '.join('/' + c for c in close)}?" if close else "/help lists the commands"


def dispatch(repl: Repl, line: str) -> Send | None:
    """Run one slash command; what it sends to the model, if anything, is the REPL's to run.
    Raises ExitRepl for /exit."""
    match = _COMMAND.match(line.strip())
    assert match is not None, "dispatch() needs a line that message_of() found to be a command"
    name, arg = match.group(1).lower(), (match.group(2) or "").strip()
    found = COMMANDS.get(name)
    if found is None:
        return _custom(repl, name, arg)
    try:
        found.check(arg)
        return found.run(repl, arg)
    except Refused as exc:
        repl.view.error(str(exc))
    except EXPECTED as exc:
        repl.view.error(str(exc))
    return None


def _custom(repl: Repl, name: str, arg: str) -> Send | None:
    """A custom command's message (its model switched to first, if it names one), or one line
    saying why nothing is sent."""
    command = repl.custom.commands.get(name)
    if command is None:
        ignored = untrusted_line(repl.custom, name)
        repl.view.error(ignored or f"unknown command /{name}, not sent to the model; {nearest(name, repl.custom)} "
                        "(// sends a line starting with /)")
        return None
    if command.model:
        for event in repl.agent.run(SwitchModel(command.model)):
            if isinstance(event, ModelSwitched) and event.changed:
                repl.refresh()
                repl.view.note(f"/{name}: model {event.model} from this message on (was {event.previous}); its "
                               "first call writes the prompt cache anew")
    return custom_send(command, arg)


# -- the commands ---------------------------------------------------------------------------

@command("help", "this list, or what one command does", "[COMMAND]")
def _help(repl: Repl, arg: str) -> None:
    width = max(len(c.name) + len(c.usage) for c in COMMANDS.values()) + 3
    if arg:
        name = arg.removeprefix("/").lower()
        if name in repl.custom.commands:
            repl.view.lines(help_lines(CommandSet({name: repl.custom.commands[name]}), width))
            return
        if name not in COMMANDS:
            raise Refused(f"no command /{name}; {nearest(name, repl.custom)}")
        c = COMMANDS[name]
        repl.view.lines([f"  /{(c.name + ' ' + c.usage).strip():<{width}} {c.help}"])
        return
    lines = [f"  /{(c.name + ' ' + c.usage).strip():<{width}} {c.help}" for c in COMMANDS.values()]
    if repl.custom.commands:
        lines += ["", "  custom commands (docs/commands.md):", *help_lines(repl.custom, width)]
    lines += ["", "  Enter sends · Alt-Enter (or Esc Enter) adds a line · Tab completes",
              "  @path attaches a file (@mod finds src/models.py) · !command runs a shell command; the model "
              "sees its output",
              "  Esc or Ctrl-C cancels the running turn (and its command) · Ctrl-C twice or Ctrl-D exits",
              "  Commands are case-insensitive; a line starting with // is sent as a message starting with /"]
    repl.view.lines(lines)


@command("stats", "calls, tokens, cache hit rate and cost of this session")
def _stats(repl: Repl, arg: str) -> None:

    repl.view.lines(stats_lines(repl.numbers(), repl.session.digest.health))


COMMANDS["cost"] = dataclasses.replace(COMMANDS["stats"], name="cost", help="the same as /stats")


@command("reflect", "compress memory now, showing the context before and after; /compact FOCUS tells the "
                    "Observer what matters most", "[FOCUS...]")
def _reflect(repl: Repl, arg: str) -> None:
    repl.view.busy("compressing memory…  (Esc or Ctrl-C cancels)")
    repl.run(Compact(arg))


COMMANDS["compact"] = dataclasses.replace(COMMANDS["reflect"], name="compact", help="the same as /reflect")


@command("init", "have the model write an AGENTS.md for this repository (asks before replacing one)")
def _init(repl: Repl, arg: str) -> Send | None:
    exists = (repl.workspace / AGENTS_MD).exists()
    if exists and not confirm_replace(repl.keys):
        repl.view.note(f"{AGENTS_MD} left as it is")
        return None
    return init_send(exists)


@command("todos", "the model's task list as it stands")
def _todos(repl: Repl, arg: str) -> None:
    items = todos_in(repl.session.events)
    if items is None:
        repl.view.note("no task list in this session yet (the model keeps one with its todo tool)")
        return
    repl.view.console.print(todo_text(items), end="")


@command("log", "the log file and its last events", "[N]")
def _log(repl: Repl, arg: str) -> None:
    from ..log.format import EventPrinter

    if arg and not (arg.isdigit() and int(arg) >= 1):
        raise Refused(f"/log N shows the last N events: N is a whole number from 1, not {arg!r}")
    count = int(arg) if arg else 10
    repl.view.lines([str(repl.session.path)], style="bold", soft_wrap=True)  # whole, to copy
    printer = EventPrinter(repl.view.console)  # the same view as `scribe log tail`
    printer.learn(repl.session.events)
    for event in repl.session.events[-count:]:
        printer(event)


@command("diff", "what changed in the workspace since this session started (git); --stat: files only",
         "[--stat]")
def _diff(repl: Repl, arg: str) -> None:
    from scribe.workspace.git.repository import GitRefused, GitUnavailable, session_diff

    if arg and arg.lower() not in ("--stat", "stat"):
        raise Refused(f"/diff takes --stat or nothing, not {arg!r}")
    try:
        changes = session_diff(repl.workspace, repl.session.header.git_head, stat=bool(arg),
                               box=repl.agent.loop.context.protection)
    except (GitUnavailable, GitRefused) as exc:
        repl.view.note(f"{exc}; /diff needs a git repository")
        return
    if not changes.text.strip():
        repl.view.note(f"no changes since {changes.base_name}")
        return
    repl.view.note(f"changes since {changes.base_name}:")
    repl.view.console.print(Hanging(diff_text(changes.text, indent="  ")), end="")


@command("undo", "take back the files scribe's tools changed in the last turn (its auto-commit, if HEAD)")
def _undo(repl: Repl, arg: str) -> None:
    repl.run(Undo())


COMMANDS["rewind"] = dataclasses.replace(COMMANDS["undo"], name="rewind", help="the same as /undo")


@command("model", "show the model; /model NAME switches this session to NAME, and the sessions /clear starts in "
                  "this REPL (the config's `model`, which later runs start with, is left as it is)", "[NAME]")
def _model(repl: Repl, arg: str) -> None:
    if not arg:
        repl.view.lines([f"model {repl.numbers().model} (sessions /clear starts here: {repl.settings.model})"])
        return
    repl.run(SwitchModel(arg))


@command("mode", "show or set the permission mode for this session (" + ", ".join(PERMISSION_MODES) + ")",
         "[MODE]")
def _mode(repl: Repl, arg: str) -> None:
    if not arg:
        repl.view.lines([f"permission mode {repl.agent.loop.policy.mode}  (modes: {', '.join(PERMISSION_MODES)})"])
        return
    mode = arg.lower()
    if mode not in PERMISSION_MODES:
        raise Refused(f"unknown mode {arg!r}; one of {', '.join(PERMISSION_MODES)}")
    repl.run(SetMode(PermissionMode(mode)))


@command("plan", "plan mode: the model reads and plans, and changes nothing until you accept its plan; "
                 "/plan TEXT plans that", "[TEXT...]")
def _plan(repl: Repl, arg: str) -> Send | None:
    if repl.agent.loop.policy.mode != PermissionMode.PLAN:
        repl.run(SetMode(PermissionMode.PLAN))
    return Send(arg) if arg.strip() else None


@command("clear", "start a new session (this one stays in the log; /resume returns to it)")
def _clear(repl: Repl, arg: str) -> None:
    repl.run(NewSession())


@command("resume", "list recent sessions here, or switch to one", "[ID]")
def _resume(repl: Repl, arg: str) -> None:
    if arg:
        repl.run(Resume(arg))
        return
    listed = session_summaries(repl.workspace, limit=RESUME_LIST, keep=repl.session.id)
    for s in listed.shown:
        mark = "*" if s.id == repl.session.id else " "
        repl.view.lines([f" {mark} {s.id}  {s.active}  {plural(s.turns, 'turn'):>9}  {s.first_prompt}"])
    if listed.more:
        repl.view.note(f"… and {plural(listed.more, 'older session')} (`scribe log list` shows them all)")
    repl.view.note("/resume ID (or any unique part of it) switches; * is this session")


@command("notes", "the project notes new sessions start with; /notes curate merges this session in now",
         "[curate]")
def _notes(repl: Repl, arg: str) -> None:
    from scribe.agent.session.session import notes_path

    path = notes_path(repl.workspace)
    if arg.lower() == "curate":
        repl.run(CurateNotes())
        return
    if arg:
        raise Refused(f"/notes takes curate or nothing, not {arg!r}")
    if not path.is_file():
        repl.view.note(f"no notes yet ({path}); they are curated when a session ends, or with /notes curate")
        return
    repl.view.lines([f"{path}:", *path.read_text(encoding="utf-8").rstrip().splitlines()])


@command("exit", "leave (the session is saved; `scribe -c` continues it)")
def _exit(repl: Repl, arg: str) -> None:
    raise ExitRepl
