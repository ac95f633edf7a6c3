"""What a sandboxed program needs to see of /tmp to start at all: the Python it runs on.

A command's sandbox has a private, empty /tmp (sandbox.py). A virtual environment that lives in
the real one (a clone under /tmp on a CI machine, a throwaway venv), or the Python it was made
from, would be out of sight: every sandboxed program started from it would fail with bubblewrap's
`execvp .../.venv/bin/python: No such file or directory`, and a command could not import what the
environment installs. These folders are bound into the sandbox read-only, each at its own path
and each alone, never the whole /tmp; outside /tmp the read-only view of the file system already
shows them.

Two sets: the interpreter scribe itself runs on (every sandboxed program may need it: an MCP
server configured as `sys.executable`, a command run from an activated venv), and what one
program's own command line names (an MCP server's venv interpreter and its script's folder)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

# The folder the sandbox replaces with a private, empty one.
PRIVATE = Path("/tmp")


def hidden_by_private_tmp(path: Path) -> bool:
    """Whether the sandbox's private /tmp hides `path` (a folder strictly inside the real /tmp)."""
    return path != PRIVATE and path.is_relative_to(PRIVATE)


def outermost(paths: Iterable[Path]) -> tuple[str, ...]:
    """The existing folders among `paths` that the private /tmp hides, each only once: a folder
    inside another one of them is covered by it."""
    found = sorted({p for p in paths if hidden_by_private_tmp(p) and p.is_dir()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in found:
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return tuple(str(p) for p in sorted(kept))


@functools.cache
def own_python() -> tuple[str, ...]:
    """The folders of the Python scribe runs on that the private /tmp would hide."""
    return interpreter_folders(Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable))


def interpreter_folders(prefix: Path, base_prefix: Path, executable: Path) -> tuple[str, ...]:
    """The folders of an interpreter that the private /tmp would hide: its venv (`prefix`), the
    base interpreter the venv points to, and the source folders of what is installed into it in
    editable mode (`pip install -e`), whose code lives outside the venv."""
    roots = [prefix.resolve(), base_prefix.resolve(), _prefix_of(executable.resolve())]
    roots += [Path(p).resolve() for p in editable_sources(prefix)]
    return outermost(roots)


def program_needs(argv: Sequence[str], cwd: str, path_variable: str | None = None) -> tuple[str, ...]:
    """What a program started as `argv` in `cwd` needs of /tmp: the program's own folder (a
    venv's interpreter: the venv and the base Python it was made from) and the folder of each
    file its arguments name (a script beside its own modules)."""
    if not argv:
        return ()
    roots: list[Path] = []
    program = _which(argv[0], cwd, path_variable)
    if program is not None:
        venv = venv_of(program)
        if venv is not None:
            roots += [venv, *(_base_of(venv))]
        roots.append(_prefix_of(program.resolve()))
    for word in argv[1:]:
        for candidate in (word, word.split("=", 1)[1] if "=" in word else ""):
            if not candidate:
                continue
            path = Path(candidate) if Path(candidate).is_absolute() else Path(cwd) / candidate
            if path.is_file():
                roots.append(path.resolve().parent)
    return outermost(roots)


def venv_of(program: Path) -> Path | None:
    """The virtual environment whose `bin/` holds `program` (as invoked, before links are
    followed: a venv's python is a link to its base interpreter), if any."""
    folder = program.absolute().parent.parent
    return folder if (folder / "pyvenv.cfg").is_file() else None


def _base_of(venv: Path) -> list[Path]:
    """The base Python a venv was made from: `home` in its pyvenv.cfg names the base's bin/."""
    try:
        lines = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(value.strip()).resolve()
            return [home.parent if home.name == "bin" else home]
    return []


def _prefix_of(executable: Path) -> Path:
    """The installation an interpreter belongs to: the folder above its bin/, else its own folder."""
    return executable.parent.parent if executable.parent.name == "bin" else executable.parent


def _which(command: str, cwd: str, path_variable: str | None) -> Path | None:
    if "/" in command:
        path = Path(command).expanduser()
        path = path if path.is_absolute() else Path(cwd) / path
        return path if path.is_file() else None
    found = shutil.which(command, path=path_variable or os.environ.get("PATH") or os.defpath)
    return Path(found) if found else None


def editable_sources(prefix: Path) -> list[str]:
    """The source folders of the distributions installed into `prefix` in editable mode, as their
    `direct_url.json` (PEP 610) names them."""
    found: list[str] = []
    for record in prefix.glob("lib/python*/site-packages/*.dist-info/direct_url.json"):
        try:
            data = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not (data.get("dir_info") or {}).get("editable"):
            continue
        url = urlsplit(str(data.get("url", "")))
        if url.scheme == "file":
            found.append(unquote(url.path))
    return found
