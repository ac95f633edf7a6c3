"""`scribe undo`: take back scribe's latest commit (auto_commit) while it is still HEAD.

HEAD goes back to the commit's parent and the files it changed return to the parent's
content; nothing else in the working tree or the index is touched. Refused, changing nothing,
when HEAD moved on, when one of those files has uncommitted changes, or when the commit was
pushed. The session's log records the undo (`git_undo`), so the model learns of it at its next
call, as an undo. A session open in another scribe is refused: that process alone writes its
log, and its watcher would report the restored files as changed outside scribe; `/undo` there
does the same undo and records it.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .errors import EXIT_FAILED, EXIT_USAGE, cli_errors, fail
from .log.common import SESSION_HELP
from .visible import visible


def undo(
    session: Annotated[str | None, typer.Option("--session", "-s", help=SESSION_HELP)] = None,
) -> None:
    """Undo scribe's last commit in a session: HEAD back to its parent, its files restored.

    Exit codes: 0 undone, 1 refused (HEAD moved, uncommitted changes to its files, pushed,
    no scribe commit), 2 not a git repository or no session.
    """
    from pathlib import Path

    from scribe.agent.autocommit import record_undo
    from scribe.agent.config import find_workspace, state_dir
    from scribe.agent.session import open_session
    from scribe.log.jsonl import SessionLocked
    from scribe.workspace.commitlock import COMMIT_LOCK
    from scribe.workspace.git import GitRefused, GitUnavailable, is_repository, undo_commit

    from .log.common import resolve_session

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        if not is_repository(workspace):
            raise fail(f"{workspace} is not a git repository; scribe undo needs one", EXIT_USAGE)
        found = resolve_session(session)
        try:
            agent_session = open_session(found)
        except SessionLocked as exc:
            raise fail(f"{exc}; undo there with /undo, so its log records the undo", EXIT_FAILED) from None
        try:
            sha = agent_session.digest.last_commit
            if sha is None:
                raise fail(f"no scribe commit in session {found.id} to undo", EXIT_FAILED)
            try:
                result = undo_commit(workspace, sha, found.id, lock=state_dir(workspace) / COMMIT_LOCK)
            except GitUnavailable as exc:
                raise fail(f"{exc}; scribe undo needs one", EXIT_USAGE) from None
            except GitRefused as exc:
                raise fail(str(exc), EXIT_FAILED) from None
            if not result.done:
                raise fail(result.message, EXIT_FAILED)
            record_undo(agent_session, result)
        finally:
            agent_session.close()
    print(f"scribe: {visible(result.message)}", file=sys.stderr)
