"""Starting a new session (its header: the instructions, tools, config and git facts it runs
with) and reopening one for appending (from its checkpoint and the lines after it), closing what a
crash left open and summarising what a reopen cannot hold (unheld.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from scribe import __version__
from scribe.agent.session.instructions import Environment, prompt_hash, read_project_texts, system_text
from scribe.agent.session.session import Session, notes_path, store_for
from scribe.agent.session.unheld import condense_unheld, observe_unheld
from scribe.context.checkpoint import NotASessionLog, reopen
from scribe.log.eventlog import EventLog
from scribe.log.events import ErrorEvent, InterruptEvent, SessionEvent, now_iso
from scribe.log.jsonl import LogError, LogWriter, SessionLock
from scribe.log.open_calls import unanswered_tool_uses
from scribe.log.store import SessionFile, exclude_from_git
from scribe.settings.values import Settings
from scribe.workspace.git.repository import git_state
from scribe.workspace.sandbox.bwrap import read_only


def start_session(workspace: Path, settings: Settings, tool_definitions: list[dict[str, Any]],
                  mcp: list[dict[str, Any]] | None = None,
                  protection: dict[str, Any] | None = None, *, agents: list[dict[str, Any]] | None = None,
                  parent: dict[str, Any] | None = None, guidance: str | None = None) -> Session:
    """`mcp`: the MCP servers as found at the start (agent/mcptools.pin); their tools are
    already among `tool_definitions`. `agents`: the sub-agents its task tool may start; `parent`
    and `guidance`: a sub-agent's parent (session, tool_use_id, agent) and its own instructions,
    in place of the main agent's (agent/task.py)."""
    # What the instructions are made of (the project's texts, git's facts), then where the log goes.
    read = read_project_texts(workspace, notes_path(workspace))
    project = read.texts
    state = git_state(workspace, read_only(settings.sandbox))
    store = store_for(workspace)
    exclude_from_git(workspace, store.root, state.exclude_dir)
    env = Environment(cwd=str(workspace), git_branch=state.branch, git_head=state.head, started=date.today())
    system = system_text(env, project, guidance)
    session_id = store.new_id()
    path = store.path_for(session_id)
    writer = LogWriter.create(path)
    header = writer.append(
        SessionEvent,
        id=session_id,
        created=now_iso(),
        cwd=str(workspace),
        model=settings.model,
        scribe_version=__version__,
        system=system,
        tools=tool_definitions,
        prompt_hash=prompt_hash(system, tool_definitions),
        config=settings.recorded(),
        git_head=state.head,
        git_branch=state.branch,
        sources=[t.source() for t in project],
        mcp=mcp or [],
        protection=protection or {},
        agents=agents or [],
        parent=parent,
    )
    session = Session(session_id, path, EventLog(header, [header], [(0, 1)]), writer, [], notices=list(read.refused))
    session.digest.add(header)
    writer.sync()
    return session


def open_session(found: SessionFile) -> Session:
    """Reopen a session for appending, from its checkpoint and the lines after it when the
    checkpoint still describes the log, else from the whole log (context/checkpoint.py). A tool
    call left without a result by a crash or a kill is closed with an `interrupt` event, so the
    log itself says what the next request shows."""
    # The lock first, then the read: a read made before taking it could miss lines another
    # writer appends meanwhile, and this one would then append after them with stale seqs.
    lock = SessionLock.acquire(found.path)
    try:
        try:
            log = reopen(found.path)
        except NotASessionLog as exc:
            raise LogError(str(exc)) from None
        except OSError as exc:
            raise LogError(f"cannot read {found.path}: {exc.strerror or exc}") from None
        if any(p.kind == "newer" for p in log.problems):
            raise LogError(f"session {found.id} was written by a newer scribe (a newer log format); "
                           "upgrade scribe to continue it")
        writer = LogWriter.after(found.path, last_seq=log.last_seq, size=log.size, torn=log.torn_tail, lock=lock,
                                 lines=log.lines, hasher=log.hasher)
    except BaseException:
        lock.release()
        raise
    problems = [f"line {p.line}: {p.message}" for p in log.problems]
    session = Session(found.id, found.path, log.events, writer, problems, chunks=log.chunks, digest=log.digest,
                      skipped=[p for p in log.problems if p.kind != "torn"])
    if log.torn_tail:
        session.append(ErrorEvent, kind="internal", torn=log.torn_tail.decode("utf-8", errors="replace"),
                       message=f"recovered a torn last line ({len(log.torn_tail)} bytes) left by a stopped writer")
    if log.unheld is not None:
        session.notices.append(observe_unheld(session, *log.unheld))
    if (condensed := condense_unheld(session)) is not None:
        session.notices.append(condensed)
    dangling = unanswered_tool_uses(session.events)
    if dangling:
        session.append(InterruptEvent, tool_use_ids=dangling, reason="the session stopped before these tool calls finished")
        session.sync()
    elif not log.from_checkpoint:
        session.checkpoint()  # read whole this time; the next reopen need not
    return session
