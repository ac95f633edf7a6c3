"""`scribe trust`: the person says that a workspace's own files (`.scribe/config.toml`,
`.mcp.json`) may apply, and what its MCP servers run; and the REPL's questions (the workspace's
files, or one server whose files changed since they were confirmed), and the one line that says
what was ignored when they may not. The answers are kept in the person's trust file
(settings/trust.py)."""

from __future__ import annotations

import sys
import termios
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .exits import cli_errors, fail
from .visible import visible

if TYPE_CHECKING:
    from rich.console import Console

    from scribe.agent.protocol import ServersToConfirm, TrustRequested
    from scribe.settings.server_pins import ServerPin
    from scribe.settings.trust import WorkspaceTrust

# The only answers that trust: anything else (Enter, "n", a sentence, Ctrl-D) does not.
YES = ("y", "yes")


def trust(
    path: Annotated[Path | None, typer.Argument(help="A folder in the workspace. [default: the current folder]")] = None,
    revoke: Annotated[bool, typer.Option("--revoke", help="Stop trusting the workspace.")] = False,
    list_: Annotated[bool, typer.Option("--list", help="List the trusted workspaces.")] = False,
) -> None:
    """Trust a workspace: its own .scribe/config.toml and .mcp.json apply from now on.

    Until then scribe ignores them and says so: a cloned repository can ship settings that turn
    off the sandbox, allow every path or start any program as an MCP server. What is trusted is
    the files as they are now, and the files its MCP servers run (the program, its script, the
    workspace modules it imports): when one changes, scribe asks again (a server that runs outside
    the sandbox does not start until then). The trust file lives in your own config folder
    (~/.config/scribe/trusted.toml), never in a workspace.
    """
    from scribe.settings.files import find_workspace, trust_of, trust_store
    from scribe.settings.server_pins import pins_to_trust
    from scribe.settings.untrusted import own_files

    with cli_errors():
        store = trust_store()
        if list_:
            for entry in store.entries():
                print(f"{visible(entry.path)}  (since {entry.since})")
            return
        folder = (path or Path.cwd()).expanduser()
        if not folder.is_dir():
            raise fail(f"{folder} is not a folder")
        workspace = find_workspace(folder)
        if revoke:
            done = store.revoke(workspace)
            print(f"{'no longer trusted' if done else 'was not trusted'}: {visible(str(workspace))}")
            return
        found = trust_of(workspace)
        pins, servers = pins_to_trust(workspace, found)
        store.grant(workspace, found.fingerprint, pins)
        print(f"trusted: {visible(str(workspace))}")
        for own in own_files(found):
            print(f"  {visible(own.change())}")
        for server in servers:
            if (line := _confirmed_line(server)) is not None:
                print(f"  {visible(line)}")
        if not found.files:
            print("  (it has no config files of its own yet; one added later is asked about)")


def _where(server: ServerPin) -> str:
    return "in the sandbox" if server.spec.wants_sandbox else "outside the sandbox, with your environment"


def _confirmed_line(server: ServerPin) -> str | None:
    """What trusting did for one server's files: None when they are as confirmed before."""
    name, count = server.spec.name, len(server.pin.files)
    if server.spec.confirmed is None:
        return f"MCP server {name} runs {_where(server)}: its {count} file{'s' if count != 1 else ''} confirmed as they are"
    if server.changed is not None:
        return f"MCP server {name} runs {_where(server)}: {server.changed}; confirmed as it is now"
    return None


def ask_trust(console: Console, question: TrustRequested) -> bool:
    """Put the workspace's question to the person: only a deliberate yes trusts (the core
    records it); Enter, "n", a sentence, Ctrl-D and Ctrl-C do not."""
    from scribe.settings.untrusted import PROMPT

    for line in question.lines:
        console.print(visible(line), markup=False, highlight=False)
    return _yes(console, PROMPT)


SERVER_PROMPT = "Start it as it is now? [y/N] "


def ask_servers(console: Console, question: ServersToConfirm) -> bool:
    """Before the REPL starts its MCP servers: one server of the trusted workspace that would run
    outside the sandbox on files changed since the person confirmed them, and what changed. Only
    a deliberate yes starts it on its files as they are now (the core records it)."""
    console.print(visible(question.line), markup=False, highlight=False)
    return _yes(console, SERVER_PROMPT)


def _yes(console: Console, prompt: str) -> bool:
    _discard_typeahead()  # a key typed before the question was shown does not answer it
    try:
        answer = input(prompt)
    except (EOFError, KeyboardInterrupt):  # Ctrl-D, Ctrl-C: no answer is not a yes
        console.print()
        answer = ""
    return answer.strip().lower() in YES


def tell_ignored(found: WorkspaceTrust) -> None:
    """The one line on stderr, for the commands that do not ask."""
    from scribe.settings.untrusted import ignored_line

    if found.ignored:
        print(f"scribe: {visible(ignored_line(found))}", file=sys.stderr)


def _discard_typeahead() -> None:
    try:
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (termios.error, OSError, ValueError):
        pass  # not a terminal: nothing typed ahead to throw away
