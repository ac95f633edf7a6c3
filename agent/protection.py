"""The protection a workspace's commands run under, from its settings: the sandbox unless
`sandbox = false`, with `allowed_paths` writable and the state folder hidden."""

from __future__ import annotations

import functools
from pathlib import Path

from scribe.workspace.sandbox import Protection, command_protection

from .config import Settings
from .config_files import state_dir


def protection_for(workspace: Path, settings: Settings) -> Protection:
    """Worked out once per process for the same workspace and settings: a new session records
    it and its agent runs under it, and finding the git folders to keep writable opens the
    repository."""
    return _protection(workspace.resolve(), tuple(settings.allowed_paths), settings.sandbox, state_dir(workspace))


@functools.lru_cache(maxsize=8)
def _protection(workspace: Path, allowed_paths: tuple[str, ...], enabled: bool, state: Path) -> Protection:
    return command_protection(workspace, allowed_roots=[Path(p).expanduser() for p in allowed_paths],
                              state_dir=state, enabled=enabled)
