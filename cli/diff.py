"""`scribe diff`: what changed in the workspace since a session began, as git sees it.

Compared with the commit the session recorded at its start (`git_head` in its first line):
tracked changes, committed since or not, and untracked files as additions. Coloured on a
terminal, plain text otherwise (a pipe, NO_COLOR). git runs as every git call of scribe's does
(workspace/git/run.py: in the sandbox, without secrets).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from .exits import EXIT_FAILED, EXIT_USAGE, cli_errors, fail
from .log.common import SESSION_HELP
from .visible import visible


def diff(
    session: Annotated[str | None, typer.Option("--session", "-s", help=SESSION_HELP)] = None,
    stat: Annotated[bool, typer.Option("--stat", help="Only the files changed and how much (git diff --stat).")] = False,
) -> None:
    """Show what changed since the session began: a unified diff of tracked and untracked files.

    Exit codes: 0 shown (or nothing changed), 1 git failed, 2 not a git repository or no session.
    """
    from scribe.log.jsonl import read_first_record
    from scribe.settings.files import find_workspace
    from scribe.settings.protection import protection_here
    from scribe.workspace.git.repository import GitRefused, GitUnavailable, is_repository, session_diff

    from .log.common import resolve_session

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        box = protection_here(workspace)
        if not is_repository(workspace, box):
            raise fail(f"{workspace} is not a git repository; scribe diff needs one", EXIT_USAGE)
        found = resolve_session(session)
        head = (read_first_record(found.path) or {}).get("git_head")
        try:
            result = session_diff(workspace, head, stat=stat, box=box)
        except GitUnavailable as exc:
            raise fail(f"{exc}; scribe diff needs one", EXIT_USAGE) from None
        except GitRefused as exc:
            raise fail(str(exc), EXIT_FAILED) from None
    if not result.text.strip():
        print(f"scribe: no changes since {result.base_name} (session {found.id})", file=sys.stderr)
        return
    print(f"scribe: changes since {result.base_name} (session {found.id})", file=sys.stderr)
    show_diff(result.text)


def show_diff(text: str) -> None:
    """Plain on a pipe; on a terminal, additions green, removals red, hunk headers cyan."""
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        sys.stdout.write(text)  # a pipe gets the diff exactly (`git apply` reads it)
        return
    text = visible(text)  # file contents: on a terminal their control characters are shown
    if console.no_color:
        sys.stdout.write(text)
        return
    styles = (("+++", "bold"), ("---", "bold"), ("diff ", "bold"), ("index ", "dim"), ("+", "green"),
              ("-", "red"), ("@@", "cyan"))
    for line in text.splitlines():
        style = next((s for prefix, s in styles if line.startswith(prefix)), "")
        console.print(Text(line, style=style))
