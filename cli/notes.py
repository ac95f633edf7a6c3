"""`scribe notes show|edit|curate`: the project notes that carry facts from one session to the next."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Annotated

import typer

from .exits import EXIT_FAILED, cli_errors, fail, warn
from .visible import visible

notes_app = typer.Typer(help="The project notes (.scribe/notes.md): curated facts that new sessions start with.",
                        no_args_is_help=True, rich_markup_mode=None)


def _path() -> Path:
    from scribe.agent.session.session import notes_path
    from scribe.settings.files import find_workspace

    return notes_path(find_workspace(Path.cwd()))


@notes_app.command()
def show() -> None:
    """Print the notes (they are plain markdown)."""
    path = _path()
    if not path.is_file():
        print(f"no notes yet ({path}); they are curated when a session ends, or with `scribe notes curate`")
        return
    text = path.read_text(encoding="utf-8")
    # A model wrote them: on a terminal their control characters are shown, not obeyed; a pipe
    # gets the file as it is.
    print(visible(text) if sys.stdout.isatty() else text, end="")


@notes_app.command()
def edit() -> None:
    """Open the notes in $VISUAL or $EDITOR (new sessions read what you save)."""
    path = _path()
    if not path.is_file():
        from scribe.log.private import make_private_folder, write_private
        from scribe.memory.notes import HEADER

        make_private_folder(path.parent)
        write_private(path, HEADER)
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        code = subprocess.call([*shlex.split(editor), str(path)])
    except FileNotFoundError:
        raise fail(f"editor '{editor}' not found; set VISUAL or EDITOR") from None
    raise typer.Exit(code)


@notes_app.command()
def curate(
    session_id: Annotated[str | None, typer.Argument(help="Session id or any unique part of it. [default: the latest]")] = None,
) -> None:
    """Merge what a session taught into the notes now (one call to the cheaper model)."""
    from scribe.agent.config import AgentConfig, SessionChoice
    from scribe.agent.core import Agent
    from scribe.agent.protocol import Curated, CurateNotes, Failed, Notice

    with cli_errors():
        choice = SessionChoice(session_id=session_id) if session_id else SessionChoice(continue_latest=True)
        with Agent(AgentConfig(Path.cwd(), choice, turns=False)) as agent:
            for event in agent.start():
                if isinstance(event, Notice):
                    warn(event.text)
            for event in agent.run(CurateNotes()):
                if isinstance(event, Curated):
                    print(event.text)
                elif isinstance(event, Failed):
                    raise fail(event.text, EXIT_FAILED)
