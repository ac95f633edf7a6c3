"""auto_commit: at the end of a turn, commit what the agent's file tools wrote in it, so each
turn's edits are one reviewable commit that `scribe undo` (or /undo) takes back.

What goes in: the files write_file and edit_file wrote successfully during the turn (read from
the log, so the record and the commit agree), each only if what is on disk is still exactly
what the agent last wrote or read (`seen_hashes`). Left out, with the reason recorded in the
`git_commit` event and shown as a notice:
- a file changed outside scribe during the turn, or one that had uncommitted changes when the
  turn began: committing it would sweep the person's work into scribe's commit, and undo
  would then take that work away too;
- a file git ignores, a file gone since, a path outside the repository.
Files that only the agent's commands changed are not committed: who changed what while a
command ran cannot be told apart from the person's own edits, and commands leave build
output behind; `scribe diff` shows them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from scribe.agent.protocol import AgentEvent, CommitFailed, Notice
from scribe.agent.session.session import Session
from scribe.log.events import (
    AssistantEvent,
    ErrorEvent,
    Event,
    FileChangeEvent,
    GitCommitEvent,
    GitUndoEvent,
    ToolResultEvent,
)
from scribe.settings.files import state_dir
from scribe.tools.base import ToolContext, ToolError
from scribe.tools.paths import display_path, resolve_path
from scribe.workspace.git.commitlock import COMMIT_LOCK
from scribe.workspace.git.repository import (
    TRAILER,
    GitRefused,
    GitUnavailable,
    commit_paths,
    dirty_paths,
    ignored_untracked,
)
from scribe.workspace.git.undo import UndoResult, undo_commit
from scribe.workspace.sandbox.bwrap import Confinement
from scribe.workspace.watcher.changes import ChangeSource, file_hash

EDIT_TOOLS = ("write_file", "edit_file")
SUBJECT_MAX = 72


def commit_message(prompt: str, session_id: str) -> str:
    """`scribe: <first line of the prompt>`, cut to one short line, and the session trailer."""
    first = next((line.strip() for line in prompt.splitlines() if line.strip()), "")
    first = " ".join(first.split()) or "(empty prompt)"
    subject = f"scribe: {first}"
    if len(subject) > SUBJECT_MAX:
        subject = subject[: SUBJECT_MAX - 1].rstrip() + "…"
    return f"{subject}\n\n{TRAILER}: {session_id}\n"


def turn_writes(events: Sequence[Event], since_seq: int) -> list[str]:
    """Path arguments of the write_file/edit_file calls after `since_seq` that succeeded, in order."""
    calls: dict[str, str] = {}
    written: list[str] = []
    for event in events:
        if event.seq < since_seq:
            continue
        if isinstance(event, AssistantEvent):
            for block in event.content:
                if block.get("type") == "tool_use" and block.get("name") in EDIT_TOOLS:
                    calls[block["id"]] = str((block.get("input") or {}).get("path", ""))
        elif isinstance(event, ToolResultEvent) and event.tool_use_id in calls and not event.is_error:
            written.append(calls[event.tool_use_id])
    return list(dict.fromkeys(written))


def _sha256(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


class TurnCommitter:
    """Built by the assembly (agent/opening.py) when auto_commit is on; the agent loop calls begin_turn and end_turn."""

    def __init__(self, workspace: Path, context: ToolContext, lock: Path | None = None) -> None:
        self.workspace = workspace
        self.context = context
        self.lock = lock  # scribe's own commit lock, shared by the workspace's sessions
        self._since = 0
        self._from = 0
        self._dirty_before: set[str] | None = None
        self._said_unavailable = False

    def begin_turn(self, session: Session) -> None:
        self._since = session.writer.next_seq
        self._from = len(session.events)  # the turn's events, without reaching into older ones
        self._dirty_before = dirty_paths(self.workspace, self.context.protection)  # None: not a repository

    def end_turn(self, session: Session, seen: Mapping[str, str], prompt: str) -> Iterator[AgentEvent]:
        events = session.events[self._from:]
        wrote = turn_writes(events, self._since)
        if not wrote:
            return
        if self._dirty_before is None:
            if not self._said_unavailable:
                self._said_unavailable = True
                yield Notice(f"auto_commit is on, but {self.workspace} is not a git repository; nothing is committed")
            return
        message = commit_message(prompt, session.id)
        try:
            files, skipped = self._choose(events, wrote, seen)
            if not files:
                if skipped:
                    yield Notice("auto-commit: nothing committed (" + _reasons(skipped) + ")")
                return
            commit = commit_paths(self.workspace, files, message, lock=self.lock, box=self.context.protection)
        except (GitRefused, GitUnavailable, OSError, ValueError) as exc:
            session.append(ErrorEvent, kind="internal", message=f"auto-commit failed, nothing committed: {exc}")
            session.sync()
            yield CommitFailed(f"auto-commit failed, nothing committed: {exc}")
            return
        if commit is None:
            return  # the files are as committed already
        session.append(GitCommitEvent, sha=commit.sha, message=message, files=commit.files, parent=commit.parent,
                       skipped=skipped)
        session.sync()
        count = len(commit.files)
        yield Notice(f"committed {commit.sha[:10]} {message.splitlines()[0]} ({count} file{'s' * (count != 1)})"
                     + ("; not committed: " + _reasons(skipped) if skipped else ""))
        if commit.warning:
            yield Notice(f"auto-commit warning: {commit.warning}")

    def _choose(self, events: Sequence[Event], wrote: list[str],
                seen: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
        outside = {e.path for e in events if isinstance(e, FileChangeEvent) and e.seq >= self._since
                   and not e.during_command}
        outside |= {e.dest for e in events if isinstance(e, FileChangeEvent) and e.seq >= self._since
                    and e.dest and not e.during_command}
        files: list[str] = []
        skipped: dict[str, str] = {}
        for arg in wrote:
            try:
                rel = display_path(self.context, resolve_path(self.context, arg, write=True))
            except ToolError:
                continue
            if rel.startswith("/"):
                continue  # under an allowed root outside the workspace: not this repository's
            digest = _sha256(self.workspace / rel)
            if digest is None:
                skipped[rel] = "gone since scribe wrote it"
            elif rel in outside:
                skipped[rel] = "changed outside scribe during the turn"
            elif seen.get(rel) != digest:
                skipped[rel] = "changed after scribe last wrote or read it"
            elif self._dirty_before is not None and rel in self._dirty_before:
                skipped[rel] = "had uncommitted changes before this turn"
            else:
                files.append(rel)
        for rel in ignored_untracked(self.workspace, files, self.context.protection) if files else set():
            files.remove(rel)
            skipped[rel] = "ignored by git"
        return files, skipped


def _reasons(skipped: Mapping[str, str]) -> str:
    return "; ".join(f"{path}: {why}" for path, why in skipped.items())


def undo_last(session: Session, workspace: Path, watcher: ChangeSource | None = None, *,
              box: Confinement | None = None) -> UndoResult:
    """Undo this session's latest commit if it is still HEAD, and record that in its log (the
    model is told at its next call, as an undo). For the REPL's /undo: the session's `watcher`
    is told what the undo left in each file, so it does not report them as changed outside
    scribe. It waits for the workspace's other sessions' commits (workspace/git/commitlock.py).
    Raises GitUnavailable outside a repository."""
    sha = session.digest.last_commit
    if sha is None:
        return UndoResult(False, "no scribe commit in this session to undo")
    result = undo_commit(workspace, sha, session.id, lock=state_dir(workspace) / COMMIT_LOCK, box=box)
    if result.done:
        if watcher is not None:
            watcher.own_writes({path: file_hash(workspace / path) for path in result.files})
        record_undo(session, result)
    return result


def record_undo(session: Session, result: UndoResult) -> None:
    assert result.sha is not None and result.head is not None
    session.append(GitUndoEvent, sha=result.sha, files=result.files, head=result.head)
    session.sync()
