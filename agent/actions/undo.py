"""Taking back what scribe's file tools changed in a turn, from the log alone (no git needed):
`/undo` when the turn was not auto-committed.

The turn is the latest one whose write_file or edit_file calls changed files and that was not
undone since (by this undo, or by the git undo of its auto-commit). Each successful call's
result carries a `restore` record (tools/restore.py); undoing replays them backwards, per file,
from what is on disk now, which must be exactly what scribe's last change left there (its
hash): a file changed since, by the person or a command, is never overwritten. Every file is
checked and its earlier content prepared before any is put in place, so a refusal, or a write
that fails, changes nothing. Every file is read, written and removed through the confined
writer (workspace/writers/confined.py): a path that leads through a link, climbs out with `..` or names
a place outside the workspace (and the allowed roots) is refused, and nothing is restored. The
`undo` event it appends tells the model at its next call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scribe.agent.actions.autocommit import EDIT_TOOLS, undo_last
from scribe.agent.session.session import Session
from scribe.log.events import (
    AssistantEvent,
    Event,
    GitCommitEvent,
    GitUndoEvent,
    ToolResultEvent,
    UndoEvent,
    UserEvent,
)
from scribe.tools.restore import CannotRestore, reverse
from scribe.workspace.sandbox.bwrap import Confinement
from scribe.workspace.watcher.changes import ChangeSource
from scribe.workspace.writers.atomic import WriteRefused
from scribe.workspace.writers.confined import ConfinedRoot, ConfinedWrite, Outside


@dataclass
class TurnEdits:
    """The file changes of one turn, as its tool results recorded them."""

    turn: int  # seq of the user event that began it
    prompt: str
    records: list[dict[str, Any]] = field(default_factory=list)  # restore records, in call order
    unrecorded: list[str] = field(default_factory=list)  # changed by a call whose result has no record
    commit: str | None = None  # its auto-commit, if any


@dataclass(frozen=True)
class EditsUndone:
    done: bool
    message: str
    files: list[str] = field(default_factory=list)


def turns_with_edits(events: Sequence[Event]) -> list[TurnEdits]:
    """Every turn whose file tools changed a file and that has not been undone, oldest first."""
    turns: list[TurnEdits] = []
    current: TurnEdits | None = None
    calls: dict[str, str] = {}  # tool_use id -> path, for the file tools' calls
    undone: set[int] = set()
    reverted: set[str] = set()  # commits undone with git
    for event in events:
        if isinstance(event, UserEvent):
            current = TurnEdits(event.seq, event.text)
            turns.append(current)
        elif isinstance(event, AssistantEvent):
            calls.update({b["id"]: str((b.get("input") or {}).get("path", "")) for b in event.content
                          if b.get("type") == "tool_use" and b.get("name") in EDIT_TOOLS})
        elif isinstance(event, ToolResultEvent) and current is not None and event.tool_use_id in calls:
            if event.is_error:
                continue
            record = event.extra.get("restore")
            if isinstance(record, dict):
                current.records.append(record)
            else:
                current.unrecorded.append(calls[event.tool_use_id])
        elif isinstance(event, GitCommitEvent) and current is not None:
            current.commit = event.sha
        elif isinstance(event, GitUndoEvent):
            reverted.add(event.sha)
        elif isinstance(event, UndoEvent):
            undone.add(event.turn)
    return [t for t in turns if (t.records or t.unrecorded) and t.turn not in undone
            and (t.commit is None or t.commit not in reverted)]


def undo(session: Session, workspace: Path, watcher: ChangeSource | None = None, *,
         box: Confinement | None = None, roots: Sequence[Path] = ()) -> EditsUndone:
    """`/undo` and `scribe undo`: when the latest turn with edits was auto-committed (or only a
    commit is left to undo), git takes that commit back, HEAD included, and refuses when HEAD
    moved on; otherwise the latest turn's edits are restored from the log. `box`: where git
    runs (the workspace's Protection); `roots`: the allowed roots outside the workspace a
    record may name. Raises GitUnavailable or GitRefused only on the git path."""
    turns = turns_with_edits(session.events)
    if session.digest.last_commit is not None and (not turns or turns[-1].commit is not None):
        result = undo_last(session, workspace, watcher, box=box)
        return EditsUndone(result.done, result.message, result.files)
    return undo_last_turn(session, workspace, watcher, turns, roots=roots)


def undo_last_turn(session: Session, workspace: Path, watcher: ChangeSource | None = None,
                   turns: list[TurnEdits] | None = None, *, roots: Sequence[Path] = ()) -> EditsUndone:
    """Restore the files of the latest turn with edits not undone yet, and record that."""
    turns = turns_with_edits(session.events) if turns is None else turns
    if not turns:
        return EditsUndone(False, "nothing to undo: scribe's file tools have changed no file in this session "
                                  "(changes made by commands are not tracked; `git status` and `git checkout` "
                                  "take those back, and auto_commit makes each turn a commit /undo can take back)")
    turn = turns[-1]
    if turn.unrecorded:
        return EditsUndone(False, f"cannot undo the last turn that changed files: this log does not hold what "
                                  f"{', '.join(dict.fromkeys(turn.unrecorded))} held before (recorded from this "
                                  "version of scribe on); nothing restored")
    try:
        pending, removed = _prepare(turn.records, workspace, roots)
    except (CannotRestore, WriteRefused) as exc:
        return EditsUndone(False, f"{exc}; nothing restored")
    problems = []
    for write in pending:
        write.commit()
    for path in removed:
        try:
            root, rel = _target(workspace, roots, path)
            root.remove(rel)
        except (OSError, WriteRefused) as exc:  # changed since it was checked: left as it is
            problems.append(f"{path} not removed ({exc})")
    files = list(dict.fromkeys(str(r["path"]) for r in turn.records))
    if watcher is not None:  # what the undo wrote is scribe's doing, not an outside change
        watcher.own_writes({path: _hash(workspace, roots, path) for path in files})
    session.append(UndoEvent, turn=turn.turn, files=files, removed=removed)
    session.sync()
    restored = [p for p in files if p not in removed]
    what = ([f"restored {', '.join(restored)}"] if restored else []) + (
        [f"removed {', '.join(removed)} (created in it)"] if removed else [])
    return EditsUndone(True, f"undid the file changes of the turn {_quoted(turn.prompt)}: {'; '.join(what)}"
                             + "".join(f"; warning: {p}" for p in problems), files)


def _prepare(records: list[dict[str, Any]], workspace: Path,
             roots: Sequence[Path]) -> tuple[list[ConfinedWrite], list[str]]:
    """Each file's content from before the turn, written beside it (not in place yet), and the
    files the turn created. Raises CannotRestore or WriteRefused (Outside for a path that
    leads out); nothing prepared is left behind."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_path.setdefault(str(record.get("path", "")), []).append(record)
    pending: list[ConfinedWrite] = []
    removed: list[str] = []
    try:
        for path, changes in by_path.items():
            root, rel = _target(workspace, roots, path)
            content: bytes | None
            try:
                content = root.read(rel)
            except FileNotFoundError:
                raise CannotRestore(f"{path} is gone since scribe wrote it") from None
            except OSError as exc:
                raise CannotRestore(f"{path} cannot be read ({(exc.strerror or str(exc)).lower()})") from None
            for record in reversed(changes):
                if content is None:  # an earlier call of the turn created it: nothing before to reverse
                    raise CannotRestore(f"{path}: the log's records of it do not follow one another")
                content = reverse(record, content)
            if content is None:
                removed.append(path)
            else:
                pending.append(root.prepare(rel, content, name=path))
    except BaseException:
        for write in pending:
            write.discard()
        raise
    return pending, removed


def _target(workspace: Path, roots: Sequence[Path], path: str) -> tuple[ConfinedRoot, str]:
    """A record's path: workspace-relative, or absolute under the workspace or an allowed root;
    Outside for anything else (a log that names a file elsewhere is not followed)."""
    if not path.startswith("/"):
        return ConfinedRoot(workspace), path
    for root in (workspace, *roots):
        base = root.resolve()
        if Path(path) == base or Path(path).is_relative_to(base):
            return ConfinedRoot(base), path
    raise Outside(f"{path} is outside the workspace and every allowed root; undo writes nothing there")


def _hash(workspace: Path, roots: Sequence[Path], path: str) -> str | None:
    try:
        root, rel = _target(workspace, roots, path)
        return hashlib.sha256(root.read(rel)).hexdigest()
    except (OSError, WriteRefused):
        return None  # removed, or not a file scribe can read


def _quoted(prompt: str, limit: int = 60) -> str:
    first = " ".join(next((line for line in prompt.splitlines() if line.strip()), "").split())
    return f"“{first if len(first) <= limit else first[:limit - 1] + '…'}”"
