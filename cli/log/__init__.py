"""`scribe log ...`: inspect session logs from the shell. Nothing here calls a model or imports
the SDK, so these commands start fast; each lives in its own module, imported only when that
command runs (`log list` does not load the page renderer of `log html`)."""

from __future__ import annotations

import typer

from scribe.cli.lazy import LazyCommand, LazyGroup

# Each command's module (in this package) and the function that is the command.
COMMANDS: dict[str, LazyCommand] = {name: LazyCommand(f"{__name__}.{module}", function) for name, (module, function) in {
    "list": ("list", "list_sessions"),
    "show": ("show", "show"),
    "tail": ("tail", "tail"),
    "stats": ("stats", "stats"),
    "prompt": ("prompt", "prompt"),
    "search": ("search", "search_logs"),
    "verify": ("verify", "verify"),
    "adopt": ("adopt", "adopt"),
    "html": ("html", "html_page"),
    "serve": ("serve", "serve_page"),
}.items()}


class LogCommands(LazyGroup):
    """The `log` group: a command is built from its module on first use."""

    table = COMMANDS


log_app = typer.Typer(
    cls=LogCommands,
    name="log",
    help="Inspect session logs: list, show, tail, stats, prompt, search, verify (and adopt a log scribe did "
         "not seal); html and serve draw a session as a page. "
         "A session is named by its id or any unique part of it, and defaults to the latest of this workspace.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
