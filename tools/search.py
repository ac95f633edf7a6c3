"""list_files and search_files: finding files by name and by content. They own the output
caps and the one `path:line:text` format both search back ends (ripgrep, Python) produce."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput
from scribe.tools.listing import SKIP_DIRS, files_under, glob_match, tree_order
from scribe.tools.paths import display_path, resolve_path
from scribe.tools.pattern import LONG_LINE_CHARS, BoundedPattern, PatternError, PatternTooSlow, cut_note
from scribe.tools.textio import SNIFF_BYTES, one_line

MAX_FILES = 1000
MAX_MATCHES = 200
MAX_MATCH_CHARS = 300
# ripgrep prints at most this many bytes of a matching line (it still searches all of it): a
# twenty-megabyte line of minified code is never read into this process.
RG_MAX_COLUMNS = 4096


def _existing(ctx: ToolContext, args: dict[str, Any]) -> tuple[Path, str]:
    base = resolve_path(ctx, str(args.get("path") or "."))
    name = display_path(ctx, base)
    if not base.exists():
        raise ToolError(f"path not found: {name}")
    return base, name


def _where(name: str) -> str:
    return "" if name == "." else f" under {name}"


class ListFiles:
    name = "list_files"
    kind: ToolKind = "read"
    description = (
        "List files in the workspace, or under path, respecting .gitignore. pattern is a glob such as "
        "`*.py` or `src/**/test_*.py`; a pattern without '/' matches file names at any depth. "
        f"Sorted; at most {MAX_FILES} entries."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to list (default: the workspace root)."},
            "pattern": {"type": "string", "description": "Glob the file paths must match."},
        },
        "required": [],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        where = str(args.get("path") or ".")
        return f"{where} ({args['pattern']})" if args.get("pattern") else where

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        base, name = _existing(ctx, args)
        pattern = args.get("pattern") or ""
        shown: list[str] = []
        for path in files_under(base, ctx.protection):
            relative = display_path(ctx, path)
            # The pattern may be written from the workspace root or from `path`; accept either.
            if pattern and not (
                glob_match(relative, pattern) or glob_match(path.relative_to(base).as_posix(), pattern)
            ):
                continue
            shown.append(relative)
        if not shown:
            what = f"no files match '{pattern}'" if pattern else "no files"
            # An ignored directory lists as empty; say why, or the model will think it is.
            return ToolOutput(f"{what}{_where(name)} (files ignored by .gitignore are not listed)")
        shown.sort(key=tree_order)
        text = "\n".join(shown[:MAX_FILES])
        if len(shown) > MAX_FILES:
            text += f"\n… {len(shown) - MAX_FILES} more files; narrow with path or pattern"
        return ToolOutput(text)


class SearchFiles:
    name = "search_files"
    kind: ToolKind = "read"
    description = (
        "Search file contents for a regular expression, under the workspace or path, respecting "
        "`.gitignore` and skipping binary files. Returns `path:line:text` lines, sorted by path, "
        f"at most {MAX_MATCHES} matches. Case-sensitive unless the pattern starts with (?i)."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {
                "type": "string",
                "description": "File or directory to search (default: the workspace).",
            },
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        where = f" in {args['path']}" if args.get("path") else ""
        return f"/{args.get('pattern', '')}/{where}"

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern: str = args["pattern"]
        if not pattern:
            raise ToolError("pattern is empty")
        try:
            bounded = BoundedPattern(pattern, ctx.regex_timeout_s)
        except PatternError as exc:
            raise ToolError(str(exc)) from None
        base, name = _existing(ctx, args)
        rg = find_ripgrep()
        cut: list[str] = []  # `path:line` of each line matched in its first LONG_LINE_CHARS only
        matches = _rg_matches(rg, pattern, base, ctx) if rg else _python_matches(bounded, base, ctx, cut)
        lines: list[str] = []
        total = 0
        try:
            for path, number, text in matches:
                total += 1
                if total <= MAX_MATCHES:
                    if len(text) > MAX_MATCH_CHARS:
                        text = text[:MAX_MATCH_CHARS] + "…"
                    lines.append(f"{path}:{number}:{text}")
        except PatternTooSlow as exc:
            raise ToolError(str(exc) + (f"; {cut_note(len(cut))} ({', '.join(cut[:3])})" if cut else "")) from None
        if total > MAX_MATCHES:
            lines.append(f"… {total - MAX_MATCHES} more matches; narrow the pattern or path")
        if cut:
            lines.append(f"… {cut_note(len(cut))} ({', '.join(cut[:3])}{', …' if len(cut) > 3 else ''})")
        if not total:
            return ToolOutput("\n".join([f"no matches for {pattern!r}{_where(name)}", *lines]))
        return ToolOutput("\n".join(lines))


Match = tuple[str, int, str]


def find_ripgrep() -> str | None:
    """ripgrep's path when it is installed; the Python fallback runs otherwise."""
    return shutil.which("rg")


def _python_matches(pattern: BoundedPattern, base: Path, ctx: ToolContext, cut: list[str]) -> Iterator[Match]:
    """Every matching line, each read and matched in at most LONG_LINE_CHARS bytes: the rest of a
    longer line is skipped unread into memory, and the line named in `cut`."""
    named = sorted(
        ((display_path(ctx, path), path) for path in files_under(base, ctx.protection)), key=lambda n: tree_order(n[0])
    )
    for name, path in named:
        # Like ripgrep: do not follow symlinks (one could point outside the workspace).
        if path.is_symlink() or not path.is_file():
            continue
        try:
            with path.open("rb") as handle:
                if b"\x00" in handle.read(SNIFF_BYTES):
                    continue
                handle.seek(0)
                for number, raw in enumerate(_bounded_lines(handle), start=1):
                    raw = raw.rstrip(b"\r\n")
                    longer = len(raw) > LONG_LINE_CHARS
                    if longer:
                        cut.append(f"{name}:{number}")
                        raw = raw[:LONG_LINE_CHARS]
                    line = raw.decode("utf-8", errors="replace")
                    if pattern.search(line, cut=longer):
                        yield name, number, line
        except OSError:
            continue  # unreadable file: skipped, as ripgrep does


def _bounded_lines(handle: Any) -> Iterator[bytes]:
    """Each line of a file, its first LONG_LINE_CHARS + 1 bytes at most (one byte past the limit
    says it was longer); the rest of a longer line is read in chunks and dropped."""
    while raw := handle.readline(LONG_LINE_CHARS + 1):
        if len(raw) > LONG_LINE_CHARS and not raw.endswith(b"\n"):
            while (rest := handle.readline(1 << 16)) and not rest.endswith(b"\n"):
                pass
        yield raw


def _rg_matches(rg: str, pattern: str, base: Path, ctx: ToolContext) -> Iterator[Match]:
    # --null puts a NUL after the path, so paths containing ':' still parse; --sort path makes
    # the order deterministic and the same as the Python fallback's (tree order).
    # --hidden and the globs make ripgrep's file set match files_under(): dotfiles included,
    # .git/.scribe and the walk's noise directories left out.
    excluded = [arg for name in sorted(SKIP_DIRS) for arg in ("--glob", f"!{name}")]
    flags = ["--line-number", "--no-heading", "--color", "never", "--with-filename", "--null", "--hidden",
             "--max-columns", str(RG_MAX_COLUMNS), "--max-columns-preview"]
    command = [rg, *flags, "--sort", "path", *excluded, "--regexp", pattern, "--", str(base)]
    # stderr goes to a file, not a pipe: a full, unread stderr pipe would stall ripgrep.
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            command, cwd=ctx.workspace, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr
        )
        assert proc.stdout is not None
        found = False
        # ripgrep's engine runs in linear time, so no pattern makes it backtrack without end;
        # a search of a huge tree is still bounded by the same budget, as a whole.
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            proc.kill()

        deadline = threading.Timer(ctx.regex_timeout_s, stop)
        deadline.start()
        try:
            for raw in proc.stdout:
                path, _, rest = raw.rstrip(b"\r\n").partition(b"\0")
                number, _, text = rest.partition(b":")
                if not number.isdigit():
                    continue
                found = True
                yield display_path(ctx, Path(os.fsdecode(path))), int(number), text.decode("utf-8", "replace")
        finally:
            deadline.cancel()
            proc.stdout.close()
            proc.wait()
        if expired.is_set():
            raise PatternTooSlow(f"the search took more than {ctx.regex_timeout_s:g} s (regex_timeout_s) and was "
                                 "stopped; narrow the path or the pattern")
        stderr.seek(0)
        errors = stderr.read().decode("utf-8", errors="replace")
    # Exit 1 is "no match"; 2 with nothing found is a real failure, e.g. a regex that Python
    # accepts but ripgrep's Rust syntax does not (look-around, backreferences).
    if proc.returncode == 2 and not found:
        raise ToolError(one_line(f"search failed: {errors.strip()}"))
