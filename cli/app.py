"""The `scribe` command: a typer app whose subcommands live in their own modules."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from scribe import __version__

from .config import config
from .demo import demo
from .diff import diff
from .log import log_app
from .mcp import mcp_app
from .notes import notes_app
from .reflect import reflect
from .run import run
from .trust import trust
from .undo import undo

app = typer.Typer(
    name="scribe",
    help="A coding agent whose memory is an append-only log of what it has seen and done.\n\n"
         "Without a command, scribe opens an interactive session in this workspace (the git "
         "repository around the current folder). `scribe demo` tries it offline.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
app.command()(run)
app.command()(demo)
app.command()(reflect)
app.command()(diff)
app.command()(undo)
app.command()(config)
app.command()(trust)
app.add_typer(log_app, name="log")
app.add_typer(notes_app, name="notes")
app.add_typer(mcp_app, name="mcp")


def _version(value: bool) -> None:
    if value:
        print(f"scribe {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def interactive(
    ctx: typer.Context,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest session of this workspace.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", help="Continue the session with this id (or unique prefix).")] = None,
    permission_mode: Annotated[str | None, typer.Option(
        "--permission-mode", "-p",
        help="What runs without asking: read-only, ask, accept-edits, full-auto. [default: ask]")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model to use; a continued session switches to it. [default: claude-sonnet-5-5]")] = None,
    auto_commit: Annotated[bool | None, typer.Option(
        "--auto-commit/--no-auto-commit",
        help="Commit the files the agent wrote at the end of each turn (/undo takes it back). [default: off]")] = None,
    trust_workspace: Annotated[bool, typer.Option(
        "--trust-workspace", help="Apply this workspace's own .scribe/config.toml and .mcp.json for this session "
                                  "without asking (`scribe trust` remembers it).")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """With no command, open the interactive session (REPL)."""
    if ctx.invoked_subcommand is not None:
        given = [flag for flag, value in (("-c", continue_), ("--resume", resume), ("-p", permission_mode),
                                          ("-m", model), ("--auto-commit", auto_commit is not None),
                                          ("--trust-workspace", trust_workspace)) if value]
        if given:  # `scribe -c run ...` would silently ignore -c: say where it belongs
            print(f"scribe: {' '.join(given)} before a command opens the REPL; give it after the command "
                  f"(scribe {ctx.invoked_subcommand} --help)", file=sys.stderr)
            raise typer.Exit(2)
        return
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("scribe: no terminal here; use `scribe run PROMPT` (or `scribe run -` to read stdin)", file=sys.stderr)
        raise typer.Exit(2)
    # Imported here: the SDK and prompt-toolkit take over a second, and `scribe --help` needn't pay.
    from .repl.loop import start

    start(continue_=continue_, resume=resume, permission_mode=permission_mode, model=model, auto_commit=auto_commit,
          trust_workspace=trust_workspace)


def main() -> None:
    app()
