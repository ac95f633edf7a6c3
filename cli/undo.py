"""`scribe undo`: take back what scribe's file tools changed in a session's last turn, as
`/undo` does (agent/actions/undo.py).

With scribe's commit (auto_commit) still at HEAD: HEAD goes back to the commit's parent and the
files it changed return to the parent's content; nothing else in the working tree or the index
is touched. Refused, changing nothing, when one of those files has uncommitted changes, or when
the commit was pushed. Without one: the last turn's files are restored from the log, refused
when one changed since scribe wrote it. The session's log records the undo (`git_undo`,
`undo`), so the model learns of it at its next call. A session open in another scribe is
refused: that process alone writes its log, and its watcher would report the restored files as
changed outside scribe; `/undo` there does the same undo and records it.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .exits import EXIT_FAILED, EXIT_USAGE, cli_errors, fail
from .log.common import SESSION_HELP
from .visible import visible


def undo(
    session: Annotated[str | None, typer.Option("--session", "-s", help=SESSION_HELP)] = None,
) -> None:
    """Undo what scribe's file tools changed in a session's last turn: its auto-commit while
    that is HEAD, else the files restored from the log.

    Exit codes: 0 undone, 1 refused (a file changed since, uncommitted changes to its files,
    pushed, nothing to undo), 2 no session.
    """
    from pathlib import Path

    from scribe.agent.actions.undo import undo as undo_turn
    from scribe.agent.session.start import open_session
    from scribe.log.jsonl import SessionLocked
    from scribe.settings.files import find_workspace
    from scribe.settings.protection import protection_for
    from scribe.settings.values import load_settings
    from scribe.workspace.git.repository import GitRefused, GitUnavailable

    from .log.common import resolve_session

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        found = resolve_session(session)
        try:
            agent_session = open_session(found)
        except SessionLocked as exc:
            raise fail(f"{exc}; undo there with /undo, so its log records the undo", EXIT_FAILED) from None
        try:
            try:
                settings = load_settings(workspace)
                result = undo_turn(agent_session, workspace, box=protection_for(workspace, settings),
                                   roots=[Path(p).expanduser() for p in settings.allowed_paths])
            except GitUnavailable as exc:
                raise fail(f"{exc}; scribe undo needs one to take back a commit", EXIT_USAGE) from None
            except GitRefused as exc:
                raise fail(str(exc), EXIT_FAILED) from None
            if not result.done:
                raise fail(result.message, EXIT_FAILED)
        finally:
            agent_session.close()
    print(f"scribe: {visible(result.message)}", file=sys.stderr)
