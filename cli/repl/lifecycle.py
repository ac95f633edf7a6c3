"""What the interactive session says around its turns: a session's life-cycle events
(agent/protocol.py) on screen as one starts (the earlier sessions curated, the MCP servers
waited for, the greeting) and as one ends (its curation, the line leaving says). A wait the
person did not ask for is said at once, with how to skip it."""

from __future__ import annotations

from rich.text import Text

from scribe import __version__
from scribe.agent.protocol import (
    Curated,
    CurationEnded,
    CurationStarted,
    LifeEvent,
    ServersStarting,
    ServersWaited,
    SessionOpened,
)
from scribe.agent.session.session import Session
from scribe.log.store import SessionFile

from .records import last_exchanges
from .view import View


def show_life(view: View, event: LifeEvent, session: Session | None) -> None:
    """`session`: the one the REPL runs in once it is open (a greeting reads its last exchanges)."""
    if isinstance(event, CurationStarted):
        what = "curating notes from earlier sessions…" if event.earlier else "curating notes…"
        view.busy(f"{what}  (Ctrl-C skips)")
    elif isinstance(event, Curated):
        if event.noteworthy:
            view.note(event.text)
    elif isinstance(event, CurationEnded):
        if event.skipped:
            view.note("notes: curation skipped (interrupted)")
        view.pause()
    elif isinstance(event, ServersStarting):
        view.note(f"starting MCP servers: {', '.join(event.names)} (waiting at most {event.limit_s:g} s)")
        view.busy("waiting for MCP servers…  (Ctrl-C stops waiting)")
    elif isinstance(event, ServersWaited):
        view.pause()
    elif isinstance(event, SessionOpened) and session is not None:
        greet(view, event, session)


def greet(view: View, opened: SessionOpened, session: Session) -> None:
    """The session's first lines: which one it is, how to use the REPL, what is worth a note,
    and for a continued one, how it ended."""
    how = "continuing session" if opened.resumed else "new session"
    view.console.print(Text.assemble(
        ("scribe ", "bold"), (__version__, "dim"), f" · {how} {opened.session_id} · {opened.model} · "
        f"permission mode {opened.mode}"))
    view.note("/help lists commands · Alt-Enter adds a line · Ctrl-C cancels a turn · Ctrl-D exits")
    for problem in opened.problems:
        view.warn(f"note: {opened.path.name} {problem}")
    for notice in opened.notices:
        view.warn(f"note: {notice}")
    for line in opened.mcp:
        view.warn(line)
    pairs = last_exchanges(session.events) if opened.resumed else []
    if pairs:
        view.note("── earlier in this session ──")
        view.exchanges(pairs)


def exit_line(session: Session, continued: SessionFile | None) -> str:
    """What leaving says: which session `scribe -c` will open, found as `-c` finds it."""
    what = "had nothing in it" if len(session.events) <= 1 else "saved"
    if continued is None:
        return f"session {session.id} {what}"
    if continued.id == session.id:
        return f"session {session.id} {what}; `scribe -c` continues it"
    return f"session {session.id} {what}; `scribe -c` continues {continued.id}"
