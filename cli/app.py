"""The `scribe` command: a typer app whose subcommands live in their own modules."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from scribe import __version__

from .demo import demo
from .reflect import reflect
from .run import run

app = typer.Typer(
    name="scribe",
    help="A coding agent whose memory is an append-only log of what it has seen and done.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command()(run)
app.command()(demo)
app.command()(reflect)


def _version(value: bool) -> None:
    if value:
        print(f"scribe {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def interactive(
    ctx: typer.Context,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest session of this workspace.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", help="Continue the session with this id (or unique prefix).")] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """With no command, open the interactive session (REPL)."""
    if ctx.invoked_subcommand is not None:
        return
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("scribe: no terminal here; use `scribe run PROMPT` (or `scribe run -` to read stdin)", file=sys.stderr)
        raise typer.Exit(2)
    print("scribe: the interactive session is not built yet; use `scribe run PROMPT`", file=sys.stderr)
    raise typer.Exit(2)


def main() -> None:
    app()
