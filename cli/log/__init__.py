"""`scribe log ...`: inspect session logs from the shell. Nothing here calls a model or imports
the SDK, so these commands start fast; each lives in its own module, imported only when that
command runs (`log list` does not load the page renderer of `log html`)."""

from __future__ import annotations

import importlib

import typer
from typer._click import Command, Context
from typer.core import TyperGroup

# Each command's module (in this package) and the function that is the command.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("list", "list_sessions"),
    "show": ("show", "show"),
    "tail": ("tail", "tail"),
    "stats": ("stats", "stats"),
    "prompt": ("prompt", "prompt"),
    "search": ("search", "search_logs"),
    "verify": ("verify", "verify"),
    "html": ("html", "html_page"),
    "serve": ("serve", "serve_page"),
}


class LogCommands(TyperGroup):
    """The `log` group: a command is built from its module on first use."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self.commands:
            module, function = COMMANDS[cmd_name]
            holder = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)
            holder.command(name=cmd_name)(getattr(importlib.import_module(f"{__name__}.{module}"), function))
            self.commands[cmd_name] = typer.main.get_group(holder).commands[cmd_name]
        return self.commands[cmd_name]


log_app = typer.Typer(
    cls=LogCommands,
    name="log",
    help="Inspect session logs: list, show, tail, stats, prompt, search, verify; html and serve draw a "
         "session as a page. "
         "A session is named by its id or a unique prefix, and defaults to the latest of this workspace.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
