"""Where session logs live, and how a session is found by id, prefix or recency.

Logs sit in `<state>/sessions/<id>.jsonl`, where the state folder is `<workspace>/.scribe`
unless SCRIBE_HOME moves it. Ids sort by creation time, so "latest" needs no index.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .log import LogError, read_first_record


class SessionNotFound(LogError):
    pass


@dataclass(frozen=True)
class SessionFile:
    id: str
    path: Path
    cwd: str | None
    created: str | None


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.sessions_dir = root / "sessions"

    def new_id(self) -> str:
        stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
        return f"{stamp}-{secrets.token_hex(3)}"

    def path_for(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.jsonl"

    def sessions(self, cwd: Path | None = None) -> list[SessionFile]:
        """All sessions, oldest first; with `cwd`, only those started in that workspace.

        Ordered by the creation time recorded in each log (milliseconds), then by id: ids only
        have seconds, and two sessions can start within one."""
        if not self.sessions_dir.is_dir():
            return []
        found = []
        for path in self.sessions_dir.glob("*.jsonl"):
            first = read_first_record(path) or {}
            created = first.get("created")
            found.append(SessionFile(path.stem, path, first.get("cwd"), created if isinstance(created, str) else None))
        found.sort(key=lambda s: (s.created or "", s.id))
        if cwd is not None:
            found = [s for s in found if s.cwd == str(cwd)]
        return found

    def latest(self, cwd: Path | None = None) -> SessionFile:
        sessions = self.sessions(cwd)
        if not sessions:
            raise SessionNotFound(f"no sessions yet in {self.sessions_dir}")
        return sessions[-1]

    def find(self, id_or_prefix: str, cwd: Path | None = None) -> SessionFile:
        """A session by exact id or unique prefix."""
        exact = self.path_for(id_or_prefix)
        if exact.is_file():
            first = read_first_record(exact) or {}
            return SessionFile(id_or_prefix, exact, first.get("cwd"), first.get("created"))
        matches = [s for s in self.sessions(cwd) if s.id.startswith(id_or_prefix)]
        if not matches:
            raise SessionNotFound(f"no session matches '{id_or_prefix}'")
        if len(matches) > 1:
            shown = ", ".join(s.id for s in matches[:5])
            raise SessionNotFound(f"'{id_or_prefix}' matches {len(matches)} sessions ({shown}); give more of the id")
        return matches[0]


def exclude_from_git(workspace: Path, state_dir: Path) -> None:
    """Keep the state folder out of git through `.git/info/exclude`, never a tracked file."""
    git_dir = workspace / ".git"
    if not git_dir.is_dir():
        return
    try:
        rel = state_dir.resolve().relative_to(workspace.resolve())
    except ValueError:
        return  # state lives outside the workspace; nothing to hide
    pattern = f"/{rel.as_posix()}/"
    exclude = git_dir / "info" / "exclude"
    existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
    if pattern in existing.splitlines():
        return
    exclude.parent.mkdir(parents=True, exist_ok=True)
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    exclude.write_text(existing + prefix + pattern + "\n", encoding="utf-8")
