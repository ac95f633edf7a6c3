"""`scribe log verify`: is a log whole, well formed, and sealed by scribe on this account? One line
per problem; exit 0 only if so."""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

import typer

from scribe.log.seal import Authenticity, authenticate
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
    event; and that the log's seal holds: that scribe wrote it, on this account, and nothing
    changed it since (only such a log is continued, undone or curated from; `scribe log adopt`
    seals one you vouch for). A torn last line and tool calls open at the very end are warnings:
    `scribe run -c` repairs both. Exit 0 when the log holds, 1 otherwise."""
    with log_command():
        if all_ and session:
            raise fail("give a session or --all, not both")
        targets = sessions_in_scope(True) if all_ else [resolve_session(session)]
        verdicts = [(found, *_verified(found)) for found in targets]
        if as_json:
            records = [_record(found, v, sealed) for found, v, sealed in verdicts]
            print_json(records if all_ else records[0])
        else:
            for found, v, sealed in verdicts:
                _print(found, v, sealed, prefix=f"{found.id}: " if all_ else "")
        if not all(v.ok and sealed.ok for _, v, sealed in verdicts):
            raise typer.Exit(EXIT_FAILED)


def _verified(found: SessionFile) -> tuple[Verdict, Authenticity]:
    """Read in chunks, not whole: a gigabyte of log is checked in the memory of one line, and
    hashed for its seal in the same pass."""
    hasher = hashlib.sha256()
    with found.path.open("rb") as fh:
        verdict = verify_file(fh, hasher)
    return verdict, authenticate(found.path, verdict.whole_bytes, hasher)


def _record(found: SessionFile, v: Verdict, sealed: Authenticity) -> dict[str, Any]:
    return {"session_id": found.id, "log": str(found.path), "ok": v.ok and sealed.ok, "lines": v.lines,
            "events": v.events, "sealed": sealed.ok, "seal": "holds" if sealed.ok else sealed.why,
            "problems": [{"line": f.line, "severity": f.severity, "message": f.message} for f in v.findings]}


def _print(found: SessionFile, v: Verdict, sealed: Authenticity, prefix: str) -> None:
    for finding in v.findings:
        print(f"{prefix}{visible(str(finding))}")  # a finding can quote the log
    if not sealed.ok:
        print(f"{prefix}not sealed by scribe on this account: {sealed.why}; it is not continued, undone or "
              f"curated from (`scribe log adopt {found.id}` if you know where it came from)")
    lines = plural(v.lines, "line")
    problems = len(v.errors) + (0 if sealed.ok else 1)
    summary = f"ok: {lines}" if not problems else f"FAILED: {plural(problems, 'problem')} in {lines}"
    if v.warnings:
        summary += f", {plural(len(v.warnings), 'warning')}"
    print(f"{prefix}{summary} ({visible(str(found.path))})")
