"""The `scribe` command: a typer app whose subcommands live in their own modules."""

from __future__ import annotations

import gc
import inspect
import sys
from typing import Annotated, Any

import typer
from typer._click import Command

from scribe import __version__

from .lazy import LazyCommand, LazyGroup, build_command

# Each command: the module and name that define it, and the first paragraph of its help (what
# `scribe --help` lists; tests/cli/test_cli_app.py checks it against the command's own). A command's
# module is imported only when that command runs or shows its help: `scribe --help` imports
# none of them.
COMMANDS: dict[str, LazyCommand] = {
    "run": LazyCommand("scribe.cli.run", "run", "Run one turn headless: the agent works until it answers, then exits."),
    "demo": LazyCommand("scribe.cli.demo", "demo", "Run a short scripted session offline: no API key, no network."),
    "reflect": LazyCommand(
        "scribe.cli.reflect", "reflect",
        "Compress a session's memory now: summarise the older conversation into observations (the most recent "
        "part stays word for word), then condense the observations. Prints the context size before and after."),
    "diff": LazyCommand("scribe.cli.diff", "diff",
                        "Show what changed since the session began: a unified diff of tracked and untracked files."),
    "undo": LazyCommand("scribe.cli.undo", "undo",
                        "Undo what scribe's file tools changed in a session's last turn: its auto-commit while that "
                        "is HEAD, else the files restored from the log."),
    "config": LazyCommand("scribe.cli.config", "config",
                          "Show every setting's value and source: a SCRIBE_* variable, a config file, or the "
                          "default."),
    "trust": LazyCommand("scribe.cli.trust", "trust",
                         "Trust a workspace: its own .scribe/config.toml and .mcp.json apply from now on."),
    "log": LazyCommand("scribe.cli.log", "log_app",
                       "Inspect session logs: list, show, tail, stats, prompt, search, verify (and adopt a log "
                       "scribe did not seal); html and serve draw a session as a page. A session is named by its id "
                       "or any unique part of it, and defaults to the "
                       "latest of this workspace."),
    "notes": LazyCommand("scribe.cli.notes", "notes_app",
                         "The project notes (.scribe/notes.md): curated facts that new sessions start with."),
    "mcp": LazyCommand("scribe.cli.mcp", "mcp_app",
                       "MCP servers: what is configured, whether each starts, and its tools."),
}


# --allowed-tools and --disallowed-tools, here and in `scribe run` (cli/rule_flags.py reads them).
ALLOWED_HELP = ("Permission rules that let calls run without asking, for this run: tool(pattern), such as "
                "'run_command(git status:*)', 'write_file(docs/**)', 'web_fetch(domain:docs.python.org)' or an "
                "MCP tool's name; commas or blanks separate rules; repeatable. Deny rules and read-only still win.")
DISALLOWED_HELP = ("Permission rules that refuse calls, for this run: 'run_command(rm *)', 'web_fetch'; commas "
                   "or blanks separate rules; repeatable. A deny rule wins over every allow.")


class Commands(LazyGroup):
    table = COMMANDS


def load_command(name: str) -> Command:
    """The click command for `name`, as the top-level group builds it."""
    return build_command(name, COMMANDS[name])


app = typer.Typer(
    cls=Commands,
    name="scribe",
    help="A coding agent whose memory is an append-only log of what it has seen and done.\n\n"
         "Without a command, scribe opens an interactive session in this workspace (the git "
         "repository around the current folder). `scribe demo` tries it offline.",
    add_completion=False,
    no_args_is_help=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"scribe {__version__}")
        raise typer.Exit()


@app.callback(invoke_without_command=True)
def interactive(
    ctx: typer.Context,
    continue_: Annotated[bool, typer.Option("--continue", "-c", help="Continue the latest session of this workspace.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", "-r", help="Continue the session with this id (or any unique part of it).")] = None,
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
    allowed_tools: Annotated[list[str] | None, typer.Option(
        "--allowed-tools", "--allowedTools", metavar="RULES", help=ALLOWED_HELP)] = None,
    disallowed_tools: Annotated[list[str] | None, typer.Option(
        "--disallowed-tools", "--disallowedTools", metavar="RULES", help=DISALLOWED_HELP)] = None,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """With no command, open the interactive session (REPL)."""
    if ctx.invoked_subcommand is not None:
        given = [flag for flag, value in (("-c", continue_), ("--resume", resume), ("-p", permission_mode),
                                          ("-m", model), ("--auto-commit", auto_commit is not None),
                                          ("--trust-workspace", trust_workspace),
                                          ("--allowed-tools", allowed_tools), ("--disallowed-tools", disallowed_tools))
                 if value]
        if given:  # `scribe -c run ...` would silently ignore -c: say where it belongs
            print(f"scribe: {' '.join(given)} before a command opens the REPL; give it after the command "
                  f"(scribe {ctx.invoked_subcommand} --help)", file=sys.stderr)
            raise typer.Exit(2)
        return
    open_repl(continue_=continue_, resume=resume, permission_mode=permission_mode, model=model,
              auto_commit=auto_commit, trust_workspace=trust_workspace, allowed_tools=allowed_tools,
              disallowed_tools=disallowed_tools)


def open_repl(**options: Any) -> None:
    """The interactive session, with the options of the callback above."""
    if not sys.stdin.isatty() or not sys.stdout.isatty():
        print("scribe: no terminal here; use `scribe run PROMPT` (or `scribe run -` to read stdin)", file=sys.stderr)
        raise typer.Exit(2)
    # Imported here: the SDK and prompt-toolkit take over a second, and `scribe --help` needn't pay.
    from .repl.repl import start

    start(**options)


# `scribe` alone: the REPL with each option at the default the callback declares.
REPL_DEFAULTS = {name: p.default for name, p in inspect.signature(interactive).parameters.items()
                 if name not in ("ctx", "version")}


def main() -> None:
    try:
        _main()
    finally:
        # On the way out, the interpreter's last garbage collection walks every object left (the
        # SDK's types and models are many): half a second after the answer is written, for
        # memory the process is about to give back whole. Nothing then needs collecting.
        gc.disable()
        gc.freeze()


def _main() -> None:
    if sys.argv[1:]:
        app()
        return
    # `scribe` alone skips typer's parsing, which builds a pydantic validator for every option
    # above, given or not: pydantic's import and schema code, about 0.1 s before the first prompt.
    try:
        open_repl(**REPL_DEFAULTS)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except KeyboardInterrupt:  # before the REPL takes Ctrl-C over: what typer would say
        print("\nAborted!", file=sys.stderr)
        sys.exit(1)
