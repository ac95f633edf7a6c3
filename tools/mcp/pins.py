"""What an MCP server started outside the sandbox runs, pinned by content: the program its command
resolves to (on its PATH), every file its command line names (an interpreter's script among
them), and, for a Python script or `-m` module of the workspace, the workspace's modules it
imports (found by reading their imports, not by running them). Each file by its sha256.

The person's trust of such a server holds for exactly these bytes (settings/trust.py keeps them
beside the workspace's trust): a model that rewrites `tools/srv.py`, or the module it imports,
changes what the next start would run, so the server does not start until the person confirms
again, and `what_changed` says in one line what differs.

What Python loads of a pinned module is what is pinned: the file its import system would take
for the name (a package's `__init__`, an extension module, a `.py`, a `.pyc` with no source, in
that order), and never bytecode the workspace's `__pycache__` holds: such a server runs with its
bytecode cache in the account's folder (`outside_python`), which no sandboxed command can write,
so a `.pyc` planted beside a pinned `.py` is never read.

Not pinned, and said so in docs/mcp.md: what a program reads or loads by other means (a dynamic
import, a config file it opens, a package in a virtualenv), and files a script in another language
pulls in.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import os
import shlex
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from scribe.log.account import account_folder

from .spec import ServerSpec

# The order importlib's path finder tries a name's files in, in each folder.
_SUFFIXES = (*importlib.machinery.EXTENSION_SUFFIXES, *importlib.machinery.SOURCE_SUFFIXES,
             *importlib.machinery.BYTECODE_SUFFIXES)
# The bytecode cache of servers run outside the sandbox, in the account's folder.
PYCACHE = "mcp-pycache"
# A file larger than this is pinned by its size and modification time, not read whole.
HASHED_BYTES = 64 * 1024 * 1024
# Imported modules followed at most (a workspace that is one big package still pins quickly).
MAX_MODULES = 500
MISSING = "missing"


@dataclass(frozen=True)
class ContentPin:
    """What a server runs: (file as shown, its hash) for each file, sorted by file."""

    files: tuple[tuple[str, str], ...]

    def as_dict(self) -> dict[str, str]:
        return dict(self.files)

    @property
    def digest(self) -> str:
        whole = hashlib.sha256()
        for name, mark in self.files:
            whole.update(f"{name}\0{mark}\0".encode())
        return "sha256:" + whole.hexdigest()


def server_cwd(spec: ServerSpec, workspace: Path) -> Path:
    """Where a stdio server runs: its `cwd` (relative to the workspace), else the workspace."""
    if not spec.cwd:
        return workspace
    path = Path(spec.cwd).expanduser()
    return path if path.is_absolute() else workspace / path


def content_pin(spec: ServerSpec, workspace: Path, environ: Mapping[str, str] | None = None) -> ContentPin:
    """The pin of a stdio server as its files are now."""
    environ = os.environ if environ is None else environ
    workspace = workspace.resolve()
    cwd = server_cwd(spec, workspace)
    files: dict[Path, None] = {}
    program = program_of(spec, cwd, environ)
    if program is not None:
        files[program] = None
    python = program is not None and _is_python(program)
    words = list(spec.args)
    for word in words:
        for candidate in _paths_in(word):
            path = (cwd / candidate) if not Path(candidate).is_absolute() else Path(candidate)
            if path.is_file():
                files[path.resolve()] = None
    scripts = [p for p in files if p.suffix == ".py" or (p == program and _is_python_script(p))]
    # (files of other suffixes a module name resolves to, .so and .pyc, are pinned, not read)
    module = _module_arg(words) if python else None
    roots = [cwd]
    if module is not None:
        for found in (_module_file(module, [cwd]), _main_of(module, [cwd])):
            if found is not None:
                files[found] = None
                scripts.append(found)
    for path in _imports(scripts, roots, workspace):
        files[path] = None
    shown = sorted((_shown(path, workspace), _mark(path)) for path in files)
    if program is None:
        shown.append((spec.command, MISSING))
    return ContentPin(tuple(sorted(shown)))


def what_changed(confirmed: Mapping[str, str] | None, now: ContentPin) -> str | None:
    """One line: what differs from what the person confirmed (None: nothing)."""
    if confirmed is None:
        return "you have not confirmed what it runs yet"
    current = now.as_dict()
    changed = [name for name in current if name in confirmed and confirmed[name] != current[name]]
    added = [name for name in current if name not in confirmed]
    gone = [name for name in confirmed if name not in current]
    parts = ([f"{_names(changed)} changed"] if changed else []) + (
        [f"{_names(added)} {'is' if len(added) == 1 else 'are'} new"] if added else []) + (
        [f"{_names(gone)} {'is' if len(gone) == 1 else 'are'} no longer run"] if gone else [])
    return "; ".join(parts) + " since you confirmed it" if parts else None


def _names(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def program_of(spec: ServerSpec, cwd: Path, environ: Mapping[str, str]) -> Path | None:
    """The file the command starts, as the process spawn finds it (the server's own PATH first)."""
    command = spec.command
    if "/" in command:
        path = Path(command).expanduser()
        path = path if path.is_absolute() else cwd / path
        return path.resolve() if path.is_file() else None
    search = spec.env.get("PATH") or environ.get("PATH") or os.defpath
    found = shutil.which(command, path=search)
    return Path(found).resolve() if found else None


def _paths_in(word: str) -> Iterator[str]:
    """The words of an argument that may name a file: itself, what follows `=`, and the words of
    a command line given as one argument (`bash -c "python3 tools/srv.py"`)."""
    yield word
    if "=" in word:
        yield word.split("=", 1)[1]
    if any(c.isspace() for c in word):
        try:
            parts = shlex.split(word)
        except ValueError:
            parts = word.split()
        for part in parts:
            yield part
            if "=" in part:
                yield part.split("=", 1)[1]


def _is_python(program: Path) -> bool:
    return program.name.startswith("python") or _is_python_script(program)


def _is_python_script(path: Path) -> bool:
    if path.suffix == ".py":
        return True
    try:
        with path.open("rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def _module_arg(words: list[str]) -> str | None:
    """The module of `python -m MODULE`."""
    for i, word in enumerate(words):
        if word == "-m" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("-m") and len(word) > 2:
            return word[2:]
    return None


def _module_file(name: str, roots: list[Path]) -> Path | None:
    """The file Python's path finder loads for module `name` from the first root that has one:
    in each folder a package (`NAME/__init__` with any suffix) comes before a module, and an
    extension module before source, source before sourceless bytecode (importlib's own order).
    A file planted ahead of the pinned `.py` is then what is pinned, so the pin changes."""
    parts = name.split(".")
    for root in roots:
        folder = root.joinpath(*parts[:-1])
        package = folder / parts[-1]
        candidates = [package / f"__init__{suffix}" for suffix in _SUFFIXES] if package.is_dir() else []
        for candidate in [*candidates, *(folder / f"{parts[-1]}{suffix}" for suffix in _SUFFIXES)]:
            if candidate.is_file():
                return candidate.resolve()
    return None


def _main_of(name: str, roots: list[Path]) -> Path | None:
    """What `python -m PACKAGE` runs after the package: its `__main__`."""
    return _module_file(f"{name}.__main__", roots) if name else None


def outside_python(argv: list[str], env: dict[str, str], program: Path | None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of a pinned server, run outside the sandbox, such that the
    Python in it (the server, or a program it starts) reads no bytecode from the workspace: its
    cache is a folder of the account's, which every sandbox hides (log/account.py), not the
    `__pycache__` beside each source, where a sandboxed command can plant a `.pyc` (an
    unchecked-hash one is loaded without a look at the source the pin covers). Set in the
    environment, and for a Python interpreter as an option too, which `-I` and `-E` do not undo."""
    cache = str(account_folder() / PYCACHE)
    env = {**env, "PYTHONPYCACHEPREFIX": cache}
    if program is not None and program.name.startswith("python") and argv:
        argv = [argv[0], "-X", f"pycache_prefix={cache}", *argv[1:]]
    return argv, env


def _imports(scripts: list[Path], roots: list[Path], workspace: Path) -> list[Path]:
    """The workspace's Python files the scripts import, found by reading their `import`s."""
    seen: set[Path] = set()
    queue = [p for p in scripts if _inside(p, workspace)]
    found: list[Path] = []
    while queue and len(seen) < MAX_MODULES:
        script = queue.pop()
        if script in seen:
            continue
        seen.add(script)
        try:
            tree = ast.parse(script.read_bytes(), filename=str(script))
        except (OSError, SyntaxError, ValueError):
            continue
        here = [script.parent, *roots]
        for name, level in _imported_names(tree):
            base = [script.parent.parents[level - 2] if level > 1 else script.parent] if level else here
            for module in _prefixes(name):
                target = _module_file(module, base) if module else _module_file("__init__", base)
                if target is not None and _inside(target, workspace) and target not in seen:
                    found.append(target)
                    queue.append(target)
    return found


def _imported_names(tree: ast.AST) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, 0
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            yield module, node.level
            for alias in node.names:  # `from pkg import sub` may name a module
                yield f"{module}.{alias.name}" if module else alias.name, node.level


def _prefixes(name: str) -> Iterator[str]:
    """`a.b.c` -> `a`, `a.b`, `a.b.c`: each package on the way is loaded too."""
    parts = name.split(".") if name else [""]
    for end in range(1, len(parts) + 1):
        yield ".".join(parts[:end])


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _shown(path: Path, workspace: Path) -> str:
    return path.relative_to(workspace).as_posix() if _inside(path, workspace) else str(path)


def _mark(path: Path) -> str:
    try:
        info = path.stat()
        if info.st_size > HASHED_BYTES:
            return f"size:{info.st_size} mtime:{info.st_mtime_ns}"
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        return "sha256:" + digest.hexdigest()
    except OSError:
        return MISSING
