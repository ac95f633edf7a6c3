"""`scribe log adopt ID`: the person vouches for a log scribe did not seal (log/seal.py), so that
it can be continued, undone and curated from like scribe's own."""

from __future__ import annotations

from typing import Annotated

import typer

from ..visible import visible
from .common import log_command, resolve_session


def adopt(
    session: Annotated[str, typer.Argument(
        help="Session id or unique prefix (or a path to a .jsonl log): which log to seal.", show_default=False)],
) -> None:
    """Seal a session log as it is now, so that scribe continues, undoes and curates from it.

    scribe seals every log it writes with a key of yours, kept outside every workspace, and acts
    only on logs whose seal holds: a log committed to a repository, copied from elsewhere, written
    before scribe sealed its logs, or changed since, is read and shown but not acted on. Adopt a
    log only if you know where it came from: its events choose which files undo rewrites. `scribe
    log verify` says whether a log's seal holds.
    """
    from scribe.log.jsonl import adopt_log, read_first_record
    from scribe.log.seal import authenticate_file

    with log_command():
        found = resolve_session(session)
        verdict = authenticate_file(found.path)
        if verdict.ok:
            print(f"session {found.id} is sealed already; nothing changed")
            return
        first = read_first_record(found.path) or {}
        sealed = adopt_log(found.path)
        started = first.get("cwd")
        where = f", started in {visible(started)}" if isinstance(started, str) else ""
        print(f"adopted session {found.id}: {visible(verdict.why)}; sealed now as it is ({sealed:,} bytes of "
              f"whole lines{where})")
