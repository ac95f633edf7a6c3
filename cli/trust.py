"""`scribe trust`: the person says that a workspace's own files (`.scribe/config.toml`,
`.mcp.json`) may apply; and the REPL's question, and the one line that says what was ignored
when they may not. The answer is kept in the person's trust file (settings/trust.py)."""

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
    the files as they are now; when one changes, scribe asks again. The trust file lives in your
    own config folder (~/.config/scribe/trusted.toml), never in a workspace.
    """
    from scribe.settings.files import find_workspace, trust_of, trust_store
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
        store.grant(workspace, found.fingerprint)
        print(f"trusted: {visible(str(workspace))}")
        for own in own_files(found):
            print(f"  {visible(own.change())}")
        if not found.files:
            print("  (it has no config files of its own yet; one added later is asked about)")


def ask(console: Console, found: WorkspaceTrust) -> WorkspaceTrust:
    """Put the question to the person; a deliberate yes records the trust and returns it
    trusted, anything else leaves it as it was (and says what is ignored)."""
    from scribe.settings.files import trust_of, trust_store
    from scribe.settings.untrusted import PROMPT, ignored_line, question

    for line in question(found):
        console.print(visible(line), markup=False, highlight=False)
    _discard_typeahead()  # a key typed before the question was shown does not answer it
    try:
        answer = input(PROMPT)
    except (EOFError, KeyboardInterrupt):  # Ctrl-D, Ctrl-C: no answer is not a yes
        console.print()
        answer = ""
    if answer.strip().lower() in YES:
        trust_store().grant(found.workspace, found.fingerprint)
        granted = trust_of(found.workspace)
        if granted.trusted:
            return granted
        found = granted  # changed while the question was open: not what the person saw
    console.print(visible(f"scribe: {ignored_line(found)}"), markup=False, highlight=False, style="yellow")
    return found


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
