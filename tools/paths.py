"""Path safety for every file tool: turning the model's path into a real file inside the
workspace (or a root config allows), and back into the workspace-relative name it sees.

Rules: relative paths are relative to the workspace; symlinks are resolved before checking,
so a link cannot smuggle a path out; `.scribe/` (the agent's own log and lock) is never read
or written, nor is any path that resolves into scribe's own folders (a state folder SCRIBE_HOME
moved, the person's config and trust file); `.git/` may be read but never written (git itself,
via run_command, owns it)."""

from __future__ import annotations

import os
from pathlib import Path

from scribe.tools.base import PathRefused, ToolContext, ToolError

# Directory names refused at any depth: a nested `.git` is a submodule's or vendored repo's.
_NO_WRITE = (".git", ".scribe")
_NO_READ = (".scribe",)


def _roots(ctx: ToolContext) -> list[Path]:
    # The workspace first, so a path inside it is judged by the workspace even when an
    # allowed root happens to contain the workspace.
    return [ctx.workspace.resolve(), *(Path(root).expanduser().resolve() for root in ctx.allowed_roots)]


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def resolve_path(ctx: ToolContext, path: str, *, write: bool = False) -> Path:
    """Resolve `path` for reading (or writing, if `write`), or raise PathRefused/ToolError."""
    if not path.strip():
        raise ToolError("path is empty")
    if "\x00" in path:
        raise ToolError("path contains a NUL byte")
    raw = Path(os.path.expanduser(path))
    candidate = raw if raw.is_absolute() else ctx.workspace.resolve() / raw
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop, on Python 3.11
        raise ToolError(f"cannot resolve path '{path}': {exc}") from exc
    root = next((r for r in _roots(ctx) if _inside(resolved, r)), None)
    if root is None:
        raise PathRefused(f"path '{path}' is outside the workspace; allow it with allowed_paths in config")
    parts = resolved.relative_to(root).parts
    for name in _NO_WRITE if write else _NO_READ:
        if name in parts:
            raise PathRefused(_refusal(path, name, write))
    own = next((f for f in ctx.scribe_folders if _inside(resolved, Path(f).resolve())), None)
    if own is not None:
        raise PathRefused(f"path '{path}' is inside {own}, scribe's own state or config; it cannot be read or written")
    return resolved


def _refusal(path: str, name: str, write: bool) -> str:
    if name == ".scribe":
        return f"path '{path}' is inside .scribe/, scribe's own log; it cannot be read or written"
    return f"path '{path}' is inside .git/; writing there is refused (use git via run_command)"


def display_path(ctx: ToolContext, path: Path) -> str:
    """The name the model sees and seen_hashes keys on: workspace-relative posix, or absolute
    posix for a file under an allowed root outside the workspace."""
    workspace = ctx.workspace.resolve()
    if _inside(path, workspace):
        return path.relative_to(workspace).as_posix() or "."
    return path.as_posix()
