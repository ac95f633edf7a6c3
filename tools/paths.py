"""Path safety for every file tool: turning the model's path into a real file inside the
workspace (or a root config allows), and back into the workspace-relative name it sees.

Rules: relative paths are relative to the workspace; symlinks are resolved before checking,
so a link cannot smuggle a path out; `.scribe/` (the agent's own log and lock) is never read
or written, nor is any path that resolves into scribe's own folders (a state folder SCRIBE_HOME
moved, the person's config and trust file); git folders may be read but never written (git
itself, via run_command, owns them): `.git` at any depth, every folder git names for this
workspace whatever its name (`.bare/`, `.git/modules/...`, a worktree's admin folder: see
workspace/git/folders.py, asked once per session), any folder shaped like one, as git
recognises one (a repository a command made since), and any write that would complete that
shape, so a git folder cannot be assembled piece by piece. The write itself then goes through the
confined writer (`confined`): resolved again below its root without following a link, so a
link swapped in after this check is refused, not followed."""

from __future__ import annotations

import os
from pathlib import Path

from scribe.tools.base import PathRefused, ToolContext, ToolError
from scribe.workspace.git.shape import git_folder_written
from scribe.workspace.writers.confined import ConfinedRoot

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
    if write:
        why = _git_folder_holding(ctx, resolved, root)
        if why is not None:
            raise PathRefused(f"path '{path}' {why} (git runs what its config and hooks name); writing there is "
                              "refused (use git via run_command)")
    own = next((f for f in ctx.scribe_folders if _inside(resolved, Path(f).resolve())), None)
    if own is not None:
        raise PathRefused(f"path '{path}' is inside {own}, scribe's own state or config; it cannot be read or written")
    return resolved


def _git_folder_holding(ctx: ToolContext, resolved: Path, root: Path) -> str | None:
    """How writing `resolved` touches a git folder (naming it as the model would), or None."""
    named = ctx.protection.git_folders if ctx.protection is not None else ()
    for folder in map(Path, named):
        if _inside(resolved, folder):
            return f"is inside {display_path(ctx, folder)}, a git folder"
    found = git_folder_written(root, resolved)
    if found is None:
        return None
    folder, how = found
    shown = display_path(ctx, folder)
    if how == "makes":
        return f"would make {shown} a git folder"
    if how == "common":
        return f"is inside {shown}, which holds objects and refs, so git would read it as a git folder's common folder"
    return f"is inside {shown}, a git folder"


def confined(ctx: ToolContext, resolved: Path) -> tuple[ConfinedRoot, str]:
    """The root `resolved` (from resolve_path) lies below, as the confined writer, and its path there."""
    root = next(r for r in _roots(ctx) if _inside(resolved, r))
    return ConfinedRoot(root), resolved.relative_to(root).as_posix()


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
