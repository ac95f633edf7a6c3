"""Which workspace paths git ignores or tracks, asked in batches and cached. git itself is run by
the caller's `GitQuery` (scribe's own git, workspace/git/repository.py's `query_in`, which runs it
confined and turns off the repository's programs: the watcher runs no git of its own). No
repository, no query, or no git: nothing is ignored and nothing is tracked."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

IGNORE_CACHE_MAX = 20_000


class GitQuery(Protocol):
    """How the watcher asks git about the workspace."""

    def top(self) -> Path | None:
        """The top of the work tree git finds from the workspace; None outside one (or without git)."""
        ...

    def __call__(self, args: Sequence[str]) -> tuple[int, bytes]:
        """git's arguments -> (exit status, stdout); OSError when git cannot be run."""
        ...


class GitIgnore:
    """`git check-ignore` in batches, cached per path. No repository: nothing is ignored."""

    def __init__(self, workspace: Path, query: GitQuery | None) -> None:
        self.workspace = workspace
        self._query = query if query is not None and self._is_top(workspace, query) else None
        self._cache: dict[str, bool] = {}
        self._lock = threading.Lock()  # asked from watchdog's thread (new folders) and the agent's

    @staticmethod
    def _is_top(workspace: Path, query: GitQuery) -> bool:
        """Whether `workspace` is itself the top of a work tree (a folder inside one is not asked)."""
        top = query.top()
        return top is not None and top.resolve() == workspace.resolve()

    def clear(self) -> None:
        self._cache.clear()

    def ignored(self, paths: Sequence[str]) -> set[str]:
        """The subset of `paths` (workspace-relative posix; a trailing / for a folder) git ignores."""
        if self._query is None or not paths:
            return set()
        unknown = [p for p in dict.fromkeys(paths) if p not in self._cache]
        if len(self._cache) + len(unknown) > IGNORE_CACHE_MAX:
            self._cache.clear()
        for start in range(0, len(unknown), 200):
            batch = unknown[start:start + 200]
            hits = set(self._git("check-ignore", "--", *batch))
            self._cache.update((p, p in hits) for p in batch)
        return {p for p in paths if self._cache.get(p)}

    def tracked(self, paths: Sequence[str]) -> set[str]:
        if self._query is None or not paths:
            return set()
        return set(self._git("ls-files", "-z", "--", *paths))

    def _git(self, *args: str) -> list[str]:
        # Exit 1 from check-ignore means "none ignored": not an error here.
        assert self._query is not None
        try:
            with self._lock:
                status, out = self._query(["-c", "core.quotepath=off", *args])
        except OSError:  # git itself missing: nothing ignored, nothing tracked
            return []
        sep = b"\0" if "-z" in args else b"\n"
        return [os.fsdecode(p) for p in out.split(sep) if p] if status in (0, 1) else []

    def close(self) -> None:
        self._query = None
