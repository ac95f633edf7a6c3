"""`scribe log verify`: is a log whole and well formed? One line per problem; exit 0 only if so."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from scribe.log.store import SessionFile
from scribe.log.verify import Verdict, verify_file
from scribe.tools.textio import plural

from ..exits import EXIT_FAILED, fail
from ..visible import visible
from .common import SESSION_HELP, log_command, print_json, resolve_session, sessions_in_scope


def verify(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    all_: Annotated[bool, typer.Option("--all", "-a", help="Verify every session under the state folder.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the findings as JSON (an array with --all).")] = False,
) -> None:
    """Check every line against the event schema, seq continuity, the session event first, and
    that each tool_use has its tool_result (or an interrupt) before the next assistant or user
    event. A torn last line and tool calls open at the very end are warnings: `scribe run -c`
    repairs both. Exit 0 when the log holds, 1 otherwise."""
    with log_command():
        if all_ and session:
            raise fail("give a session or --all, not both")
        targets = sessions_in_scope(True) if all_ else [resolve_session(session)]
        verdicts = [(found, _verified(found)) for found in targets]
        if as_json:
            records = [_record(found, v) for found, v in verdicts]
            print_json(records if all_ else records[0])
        else:
            for found, v in verdicts:
                _print(found, v, prefix=f"{found.id}: " if all_ else "")
        if not all(v.ok for _, v in verdicts):
            raise typer.Exit(EXIT_FAILED)


def _verified(found: SessionFile) -> Verdict:
    """Read in chunks, not whole: a gigabyte of log is checked in the memory of one line."""
    with found.path.open("rb") as fh:
        return verify_file(fh)


def _record(found: SessionFile, v: Verdict) -> dict[str, Any]:
    return {"session_id": found.id, "log": str(found.path), "ok": v.ok, "lines": v.lines, "events": v.events,
            "problems": [{"line": f.line, "severity": f.severity, "message": f.message} for f in v.findings]}


def _print(found: SessionFile, v: Verdict, prefix: str) -> None:
    for finding in v.findings:
        print(f"{prefix}{visible(str(finding))}")  # a finding can quote the log
    lines = plural(v.lines, "line")
    summary = f"ok: {lines}" if v.ok else f"FAILED: {plural(len(v.errors), 'problem')} in {lines}"
    if v.warnings:
        summary += f", {plural(len(v.warnings), 'warning')}"
    print(f"{prefix}{summary} ({visible(str(found.path))})")
