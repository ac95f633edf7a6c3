"""Noticing files that change in the workspace while a session runs, when the agent's own file
tools did not change them: a person editing in another window, a formatter, a `git pull`.

    watchdog threads:        file system events -> PendingChanges (per path, time of the last event)
    agent loop, safe point:  drain(seen) -> settled paths -> compared with what the agent saw -> FileChange

Rules:
- A burst of events on one path (an editor's write-to-temp-and-rename) settles into one change
  once the path has been quiet for DEBOUNCE_S; a rename is one "moved" change.
- The agent's own writes are not changes: their hash is the one in `seen` (ToolContext.seen_hashes,
  which read_file, write_file and edit_file keep). Nor are scribe's other writes, an undo's
  restored files: `own_writes` gives their hashes (None: removed), and a path settling at that
  hash is not reported.
- While the agent's own command runs (and briefly after), changes are the command's doing and are
  not reported, except to a file the agent had read or written: its view of that file is stale,
  whoever changed it.
- Ignored: `.git/` and `.scribe/` at any depth, the state folder, and what git ignores (asked in
  batches through the git runner the caller hands in, cached). Ignored top-level folders (`.venv/`, `node_modules/`) are
  not even watched, so they cost nothing.

This module knows nothing of the agent, its tools or a terminal; watchdog is imported when
watching starts, so importing it is free.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.workspace.watcher.changes import FileChange, Pending, PendingChanges, file_hash
from scribe.workspace.watcher.gitignore import GitIgnore, GitQuery
from scribe.workspace.writers.atomic import TEMPORARY_SUFFIX

DEBOUNCE_S = 0.15  # a path quiet this long has settled
COMMAND_GRACE_S = 0.25  # events this soon after the agent's command ended are still its doing
MAX_CHANGES = 40  # one drain lists this many; the rest become one "many" change
SKIP_NAMES = frozenset({".git", ".scribe"})


class WorkspaceWatcher:
    """A watchdog observer over the workspace, feeding PendingChanges; `drain` turns settled
    paths into FileChange records."""

    def __init__(self, workspace: Path, exclude: Sequence[Path] = (), *,
                 clock: Callable[[], float] = time.monotonic, debounce_s: float = DEBOUNCE_S,
                 git: GitQuery | None = None) -> None:
        self.root = workspace.resolve()
        self._git = git  # how to ask git what it ignores; None: nothing is ignored
        self._prefix = str(self.root) + os.sep
        # folders inside the workspace never reported (the state folder, wherever SCRIBE_HOME puts it)
        self._excluded = tuple(Path(p).resolve().relative_to(self.root).as_posix() for p in exclude
                               if Path(p).resolve().is_relative_to(self.root) and Path(p).resolve() != self.root)
        self.clock = clock
        self.debounce_s = debounce_s
        self.pending = PendingChanges(clock)
        self._commands = 0
        self._command_until = float("-inf")
        self._known: dict[str, tuple[str, str | None]] = {}  # path -> (kind, hash) last settled
        # path -> hash scribe itself left there outside the file tools (None: removed it)
        self._own: dict[str, str | None] = {}
        self._observer: Any = None
        self._watches: dict[str, Any] = {}  # top-level folder name -> its recursive watch
        self._handler: Any = None
        self._ignore: GitIgnore | None = None
        self._problem: str | None = None
        self._failure: str | None = None  # the last exception an event handler met, until taken

    # -- life ------------------------------------------------------------------------------------

    def start(self) -> str | None:
        if self._observer is not None or self._problem is not None:
            return self._problem
        try:
            from watchdog.observers import Observer

            self._ignore = GitIgnore(self.root, self._git)
            self._handler = _handler_for(self)
            self._observer = Observer()
            self._observer.schedule(self._handler, str(self.root), recursive=False, event_filter=_event_filter())
            for name in self._top_folders():
                self._watch_folder(name)
            self._observer.start()
        except (OSError, ImportError, RuntimeError) as exc:  # e.g. the inotify watch limit
            observer, self._observer = self._observer, None
            if observer is not None:
                observer.stop()  # emitters that did start
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:  # what inotify says at its limit
                reason = "too many folders for the inotify watch limit, fs.inotify.max_user_watches"
            self._problem = f"file watcher off ({reason}); outside changes will not be noticed"
        return self._problem

    def stop(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=5)
        if self._ignore is not None:
            self._ignore.close()

    @property
    def watching(self) -> bool:
        return self._observer is not None

    @contextmanager
    def command_running(self) -> Iterator[None]:
        self._commands += 1
        try:
            yield
        finally:
            self._commands -= 1
            self._command_until = self.clock() + COMMAND_GRACE_S

    def own_writes(self, hashes: Mapping[str, str | None]) -> None:
        self._own.update(hashes)

    # -- what watchdog tells -------------------------------------------------------------------

    def _relative(self, path: Path | str) -> str | None:
        """Workspace-relative posix path, or None when outside the workspace or excluded."""
        text = str(path)
        if not text.startswith(self._prefix):
            return None
        rel = text[len(self._prefix):].replace(os.sep, "/")
        parts = rel.split("/")
        if SKIP_NAMES.intersection(parts):
            return None
        for excluded in self._excluded:
            if rel == excluded or rel.startswith(excluded + "/"):
                return None
        return rel

    def _during_command(self) -> bool:
        return self._commands > 0 or self.clock() < self._command_until

    def on_event(self, event: Any) -> None:
        """Called on watchdog's dispatch thread for every event that passed the filter."""
        kind = event.event_type
        src = self._relative(os.fsdecode(event.src_path))
        dest = self._relative(os.fsdecode(event.dest_path)) if getattr(event, "dest_path", "") else None
        during = self._during_command()
        if event.is_directory:
            self._on_folder(kind, src, dest, during)
            return
        if src is not None and src.rsplit("/", 1)[-1] == ".gitignore" and self._ignore is not None:
            self._ignore.clear()
        if kind == "moved":
            if src is not None and dest is not None:
                self.pending.note("moved", src, dest, during_command=during)
            elif src is not None:
                self.pending.note("deleted", src, during_command=during)
            elif dest is not None:
                self.pending.note("created", dest, during_command=during)
        elif src is not None:
            self.pending.note("modified" if kind == "closed" else kind, src, during_command=during)

    def _on_folder(self, kind: str, src: str | None, dest: str | None, during: bool) -> None:
        if kind in ("deleted", "moved") and src is not None:
            self.pending.note("dir_gone", src, during_command=during)
            if "/" not in src and src in self._watches:
                self._unwatch_folder(src)
        if kind == "moved" and src is not None and dest is not None and "/" not in src:
            # a top-level folder renamed: its watch followed the old name; watch the new one
            if "/" not in dest and self._watch_folder(dest):
                for rel in self._files_under(dest):
                    self.pending.note("moved", src + rel[len(dest):], rel, during_command=during)
        elif kind in ("created", "moved") and (dest or src) is not None:
            new = dest if kind == "moved" else src
            assert new is not None
            if "/" not in new and self._watch_folder(new):
                # files written before the watch existed would otherwise go unseen
                for rel in self._files_under(new):
                    self.pending.note("created", rel, during_command=during)

    # -- watches -------------------------------------------------------------------------------

    def _top_folders(self) -> list[str]:
        names = []
        with os.scandir(self.root) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and self._relative(entry.path) is not None:
                    names.append(entry.name)
        assert self._ignore is not None
        ignored = self._ignore.ignored([n + "/" for n in names])
        return sorted(n for n in names if n + "/" not in ignored)

    def _watch_folder(self, name: str) -> bool:
        if self._observer is None:
            return False
        if name in self._watches or self._relative(self._prefix + name) is None:
            return False
        assert self._ignore is not None
        if self._ignore.ignored([name + "/"]):
            return False
        path = self.root / name
        if not path.is_dir() or path.is_symlink():
            return False
        self._watches[name] = self._observer.schedule(self._handler, str(path), recursive=True,
                                                      event_filter=_event_filter())
        return True

    def _unwatch_folder(self, name: str) -> None:
        watch = self._watches.pop(name, None)
        if watch is not None and self._observer is not None:
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError):
                pass

    def _files_under(self, folder: str) -> list[str]:
        found = []
        for dirpath, dirnames, filenames in os.walk(self.root / folder):
            dirnames[:] = [d for d in dirnames if d not in SKIP_NAMES]
            for name in filenames:
                rel = self._relative(os.path.join(dirpath, name))
                if rel is not None:
                    found.append(rel)
        return found

    # -- drain ---------------------------------------------------------------------------------

    def take_failure(self) -> str | None:
        """The last error met while handling file system events (once), so it can be reported."""
        failure, self._failure = self._failure, None
        return failure

    def drain(self, seen: Mapping[str, str]) -> list[FileChange]:
        if not self.pending:
            return []
        entries, gone_dirs = self.pending.take_settled(self.debounce_s)
        candidates = self._candidates(entries, gone_dirs, seen)
        if not candidates:
            return []
        candidates = self._without_ignored(candidates)
        changes: list[FileChange] = []
        overflow: list[str] = []
        for cand in sorted(candidates, key=lambda c: (c.path not in seen, c.path)):
            target = cand.dest if cand.kind == "moved" else cand.path
            assert target is not None
            stale = cand.path in seen
            if cand.during_command and not stale:
                self._known.pop(target, None)
                continue  # the agent's command did it (or cannot be told apart from it)
            if len(changes) >= MAX_CHANGES and not stale:
                overflow.append(target)
                continue
            digest = file_hash(self.root / target) if cand.kind != "deleted" else None
            if digest is not None and seen.get(cand.path) == digest and cand.kind in ("created", "modified"):
                self._known[target] = (cand.kind, digest)
                continue  # the agent's own write, or a save that changed nothing
            if target in self._own:
                if self._own[target] == digest and cand.kind != "moved":
                    self._known[target] = (cand.kind, digest)
                    continue  # scribe's own undo (its events may settle over several drains)
                del self._own[target]  # changed again since: whatever it is now is not ours
            if self._known.get(target) == (cand.kind, digest) and cand.kind != "deleted":
                continue  # already reported exactly this
            if cand.kind == "deleted" and self._known.get(cand.path, ("",))[0] == "deleted":
                continue
            self._known[target] = (cand.kind, digest)
            if cand.kind == "moved":
                self._known[cand.path] = ("deleted", None)
            changes.append(FileChange(cand.path, cand.kind, digest, stale, cand.dest, cand.during_command))
        if overflow:
            where = os.path.commonpath(overflow) if len(overflow) > 1 else os.path.dirname(overflow[0])
            changes.append(FileChange(where or ".", "many", count=len(overflow)))
        return changes

    def _candidates(self, entries: dict[str, Pending], gone_dirs: dict[str, bool],
                    seen: Mapping[str, str]) -> list[_Candidate]:
        out: list[_Candidate] = []
        consumed: set[str] = set()
        unknown: list[str] = []
        exists = {p: (self.root / p).is_file() for p in entries}
        # scribe's own atomic writes (workspace/writers/atomic.py, confined.py) go through a temporary
        # file renamed over the target: never a change of its own, whichever drain sees which
        # half of it. The target's own entry says what happened to it.
        consumed.update(p for p in entries if p.rsplit("/", 1)[-1].endswith(TEMPORARY_SUFFIX))
        for path, entry in sorted(entries.items()):
            if path in consumed:
                continue
            dest = entry.moved_to
            partner = entries.get(dest) if dest else None
            # a rename: the old name is gone, the new one holds it (a temporary file renamed over
            # a real one is an editor's save, not a move: the target counts as modified below)
            if (dest and partner is not None and partner.moved_from == path and entry.existed
                    and not exists[path] and exists.get(dest) and dest not in consumed):
                consumed.update((path, dest))
                out.append(_Candidate("moved", path, dest, entry.during_command or partner.during_command))
        for path, entry in sorted(entries.items()):
            if path in consumed:
                continue
            if exists[path]:
                if entry.existed is None and path not in seen:
                    known = self._known.get(path)
                    if known is not None and known[0] != "deleted":
                        out.append(_Candidate("modified", path, None, entry.during_command))
                    else:
                        unknown.append(path)
                    continue
                # created and rewritten within one burst, but the agent had it: modified, to the agent
                kind = "created" if entry.existed is False and path not in seen else "modified"
            elif entry.existed:
                kind = "deleted"
            else:
                continue  # came and went within the burst (a temporary file)
            out.append(_Candidate(kind, path, None, entry.during_command))
        if unknown:
            assert self._ignore is not None
            tracked = self._ignore.tracked(unknown)
            out += [_Candidate("modified" if p in tracked else "created", p, None, entries[p].during_command)
                    for p in unknown]
        # a folder deleted or moved away whole: the files the agent had seen in it are gone
        for folder, during in gone_dirs.items():
            for path in seen:
                if (path.startswith(folder + "/") and path not in entries and path not in consumed
                        and not (self.root / path).exists()):
                    out.append(_Candidate("deleted", path, None, during))
        return out

    def _without_ignored(self, candidates: list[_Candidate]) -> list[_Candidate]:
        assert self._ignore is not None
        names = [c.path for c in candidates] + [c.dest for c in candidates if c.dest]
        ignored = self._ignore.ignored(names)
        if not ignored:
            return candidates
        kept = []
        for c in candidates:
            src_out, dest_out = c.path in ignored, c.dest in ignored
            if c.kind == "moved" and c.dest is not None:
                if src_out and dest_out:
                    continue
                if src_out:
                    c = _Candidate("created", c.dest, None, c.during_command)
                elif dest_out:
                    c = _Candidate("deleted", c.path, None, c.during_command)
            elif src_out:
                continue
            kept.append(c)
        return kept


@dataclass(frozen=True)
class _Candidate:
    kind: str
    path: str
    dest: str | None
    during_command: bool


def _event_filter() -> list[type]:
    """Only what can change a file's content or existence: no opens, reads or attribute changes.
    On Linux a modification is reported once, when the writer closes the file (not per write)."""
    import sys

    from watchdog import events as ev

    wanted: list[type] = [ev.FileCreatedEvent, ev.FileDeletedEvent, ev.FileMovedEvent,
                          ev.DirCreatedEvent, ev.DirDeletedEvent, ev.DirMovedEvent]
    wanted.append(ev.FileClosedEvent if sys.platform.startswith("linux") else ev.FileModifiedEvent)
    return wanted


def _handler_for(watcher: WorkspaceWatcher) -> Any:
    from watchdog.events import FileSystemEventHandler

    class Handler(FileSystemEventHandler):
        def dispatch(self, event: Any) -> None:
            try:
                watcher.on_event(event)
            except Exception as exc:  # raised here it would end the observer thread: keep it to report
                watcher._failure = f"{type(exc).__name__}: {exc}"

    return Handler()
