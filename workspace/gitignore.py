"""Which workspace paths git ignores or tracks, asked through gitpython in batches and cached.
No repository, or no git: nothing is ignored and nothing is tracked."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

IGNORE_CACHE_MAX = 20_000


class GitIgnore:
    """`git check-ignore` through gitpython, in batches, cached per path. No repository: nothing
    is ignored."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._repo: Any = None
        self._cache: dict[str, bool] = {}
        self._lock = threading.Lock()  # asked from watchdog's thread (new folders) and the agent's
        import git

        try:
            self._repo = git.Repo(workspace, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):  # not a repository: nothing to ask
            self._repo = None

    def clear(self) -> None:
        self._cache.clear()

    def ignored(self, paths: Sequence[str]) -> set[str]:
        """The subset of `paths` (workspace-relative posix; a trailing / for a folder) git ignores."""
        if self._repo is None or not paths:
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
        if self._repo is None or not paths:
            return set()
        return set(self._git("ls-files", "-z", "--", *paths))

    def _git(self, *args: str) -> list[str]:
        # Exit 1 from check-ignore means "none ignored": not an error here.
        import git

        try:
            with self._lock:
                status, out, _ = self._repo.git.execute(
                    ["git", "-c", "core.quotepath=off", *args], with_extended_output=True, with_exceptions=False,
                    strip_newline_in_stdout=False)
        except (git.GitCommandNotFound, OSError):  # git itself missing: nothing ignored, nothing tracked
            return []
        sep = "\0" if "-z" in args else "\n"
        return [p for p in out.split(sep) if p] if status in (0, 1) else []

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
