"""The file tools: read_file, write_file and edit_file. They own how a file is shown to the
model (numbered lines, binary summaries) and the rule that an edit never lands on a file that
changed since the model last saw it (tracked through `ctx.seen_hashes`). What they write goes
through the confined writer (workspace/writers/confined.py): never through a link, never outside."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput
from scribe.tools.numbered import numbered_lines
from scribe.tools.paths import confined, display_path, resolve_path
from scribe.tools.restore import for_edit, for_write
from scribe.tools.textio import (
    SNIFF_BYTES,
    binary_kind,
    count_lines,
    human_bytes,
    plural,
    sha256_bytes,
    sha256_file,
)
from scribe.workspace.writers.atomic import WriteRefused, refuse_special, special_kind

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
# Total characters one read returns, whatever the limit: 2000 very long lines would otherwise
# flood the context. The "more lines" trailer tells the model where to continue. A read is
# shown to the model whole, never as a preview (context/preview.py): it holds the exact lines an
# edit is made from, so this is also what one read may add to the prompt (about 11k tokens).
MAX_READ_CHARS = 40_000
MAX_DIFF_LINES = 150


def _path_arg(args: dict[str, Any]) -> str:
    return str(args.get("path", ""))


def _require_file(ctx: ToolContext, target: Path) -> str:
    name = display_path(ctx, target)
    if target.is_dir():
        raise ToolError(f"{name} is a directory; use list_files to see its contents")
    if not target.exists():
        raise ToolError(f"file not found: {name}")
    kind = special_kind(target)
    if kind is not None:
        raise ToolError(f"{name} is {kind}, not a regular file")
    return name


def _check_not_stale(ctx: ToolContext, name: str, current_hash: str) -> None:
    seen = ctx.seen_hashes.get(name)
    if seen is not None and seen != current_hash:
        raise ToolError(f"{name} changed since you last read it; read it again before editing")


class ReadFile:
    name = "read_file"
    kind: ToolKind = "read"
    description = (
        "Read a text file in the workspace. Lines come numbered like `cat -n` (the number and tab "
        "are not part of the file). Use offset (1-based first line) and limit to page through long "
        f"files; at most {DEFAULT_LIMIT} lines per call. Binary files are summarised, not shown."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (default 1)."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "description": f"Lines to show (default {DEFAULT_LIMIT}).",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        path, first, limit = _path_arg(args), args.get("offset") or 1, args.get("limit")
        if isinstance(first, int) and isinstance(limit, int):
            return f"{path} (lines {first}-{first + limit - 1})"
        return f"{path} (from line {first})" if args.get("offset") else path

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        target = resolve_path(ctx, args["path"])
        name = _require_file(ctx, target)
        offset = int(args.get("offset", 1))
        limit = int(args.get("limit", DEFAULT_LIMIT))
        with target.open("rb") as handle:
            kind = binary_kind(handle.read(SNIFF_BYTES))
        if kind is not None:
            ctx.seen_hashes[name] = sha256_file(target)
            size = human_bytes(target.stat().st_size)
            return ToolOutput(f"{name} is a binary file ({kind}, {size}); its contents are not shown")
        lines = numbered_lines(target, offset, limit, MAX_LINE_CHARS, MAX_READ_CHARS)
        shown, total, crlf = lines.shown, lines.total, lines.crlf
        ctx.seen_hashes[name] = lines.digest
        if total == 0:
            return ToolOutput(f"{name} is empty")
        if offset > total:
            raise ToolError(f"offset {offset} is past the end of {name} ({total} lines)")
        text = "\n".join(shown)
        last = offset + len(shown) - 1
        if last < total:
            text += f"\n… {plural(total - last, 'more line')}; use offset={last + 1}"
        if crlf:
            text += "\n(file uses CRLF line endings)"
        return ToolOutput(text)


class WriteFile:
    name = "write_file"
    kind: ToolKind = "edit"
    description = (
        "Create a file, or overwrite one completely, with the given UTF-8 content; parent directories "
        "are created. To change part of an existing file, prefer edit_file."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        return _path_arg(args)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        plan = plan_write(args, ctx)
        root, rel = confined(ctx, plan.target)
        previous = root.read(rel) if plan.existed else None  # kept so /undo can put it back
        root.write(rel, plan.data, name=plan.name, make_parents=True)
        ctx.seen_hashes[plan.name] = sha256_bytes(plan.data)
        verb = "overwrote" if plan.existed else "created"
        return ToolOutput(
            f"{verb} {plan.name}: wrote {plural(count_lines(args['content']), 'line')} ({plural(len(plan.data), 'byte')})",
            restore=for_write(plan.name, previous, plan.data, ctx.redact),
        )


@dataclass(frozen=True)
class PlannedWrite:
    """A write_file call that passed every check, before anything is written."""

    target: Path
    name: str
    data: bytes
    existed: bool


def plan_write(args: dict[str, Any], ctx: ToolContext) -> PlannedWrite:
    """Every check write_file makes, without writing: raises ToolError (or OSError,
    UnicodeError) exactly when the write would be refused. The approval preview uses it, so
    what it says will fail is what the tool refuses."""
    target = resolve_path(ctx, args["path"], write=True)
    name = display_path(ctx, target)
    if target.is_dir():
        raise ToolError(f"{name} is a directory; give a file path")
    blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise ToolError(f"cannot create {name}: {display_path(ctx, blocker)} is a file, not a directory")
    try:
        refuse_special(target, name)  # before anything opens it: a FIFO would block
    except WriteRefused as exc:
        raise ToolError(str(exc)) from None
    existed = target.exists()
    if existed:
        # Overwriting must not silently discard changes made outside the agent either.
        _check_not_stale(ctx, name, sha256_file(target))
    return PlannedWrite(target, name, args["content"].encode("utf-8"), existed)


class EditFile:
    name = "edit_file"
    kind: ToolKind = "edit"
    description = (
        "Replace old_text with new_text in a file. old_text must occur exactly once and match the file "
        "exactly, whitespace included (without read_file's line-number prefixes); add surrounding lines "
        "to make it unique. Refused if the file changed since you last read it. Returns the diff."
    )

    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace root."},
            "old_text": {"type": "string", "description": "Exact text to replace; must occur once."},
            "new_text": {"type": "string", "description": "Replacement text (may be empty to delete)."},
        },
        "required": ["path", "old_text", "new_text"],
        "additionalProperties": False,
    }

    def summary(self, args: dict[str, Any]) -> str:
        return _path_arg(args)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        plan = plan_edit(args, ctx)
        new_data = plan.after.encode("utf-8", errors="surrogateescape")
        root, rel = confined(ctx, plan.target)
        root.write(rel, new_data, name=plan.name)
        ctx.seen_hashes[plan.name] = sha256_bytes(new_data)
        old_data = plan.before.encode("utf-8", errors="surrogateescape")
        return ToolOutput(_diff(plan.name, plan.before, plan.after),
                          restore=for_edit(plan.name, old_data, new_data, plan.at, plan.old, plan.new))


@dataclass(frozen=True)
class PlannedEdit:
    """An edit_file call that passed every check: the file's text before and after it."""

    target: Path
    name: str
    before: str
    after: str
    # Where the replacement landed in `before`, and the texts as matched (line endings adjusted).
    at: int = 0
    old: str = ""
    new: str = ""


def plan_edit(args: dict[str, Any], ctx: ToolContext) -> PlannedEdit:
    """Every check edit_file makes, without writing: raises ToolError (or OSError) exactly when
    the edit would be refused (no match or several, a stale or binary file, a refused path).
    The approval preview uses it, so what it says will fail is what the tool refuses."""
    target = resolve_path(ctx, args["path"], write=True)
    name = _require_file(ctx, target)
    old_text: str = args["old_text"]
    new_text: str = args["new_text"]
    if not old_text:
        raise ToolError("old_text is empty; to create or replace a whole file use write_file")
    if old_text == new_text:
        raise ToolError("old_text and new_text are identical; nothing to change")
    root, rel = confined(ctx, target)
    data = root.read(rel)  # below the workspace, through no link: what the edit is made on
    if binary_kind(data[:SNIFF_BYTES]) is not None:
        raise ToolError(f"{name} is a binary file; edit_file only edits text")
    _check_not_stale(ctx, name, sha256_bytes(data))
    # surrogateescape carries undecodable bytes through the edit unchanged.
    before = data.decode("utf-8", errors="surrogateescape")
    old_text, new_text = _match_line_endings(before, old_text, new_text)
    matches = before.count(old_text)
    if matches == 0:
        raise ToolError(f"old_text not found in {name}; read the file again and copy the text exactly")
    if matches > 1:
        raise ToolError(
            f"old_text matches {matches} times in {name}; include more surrounding lines to make it unique"
        )
    return PlannedEdit(target, name, before, before.replace(old_text, new_text, 1), before.find(old_text),
                       old_text, new_text)


def _match_line_endings(content: str, old_text: str, new_text: str) -> tuple[str, str]:
    """The model writes "\\n"; a CRLF file needs "\\r\\n" for old_text to match and for the
    replacement not to mix line endings."""
    if "\r\n" in content and "\n" in old_text and "\r\n" not in old_text and old_text not in content:
        return old_text.replace("\n", "\r\n"), new_text.replace("\r\n", "\n").replace("\n", "\r\n")
    return old_text, new_text


def _diff(name: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), fromfile=f"a/{name}", tofile=f"b/{name}", n=3, lineterm=""
    )
    out = [line.rstrip("\r") for line in lines]
    if len(out) > MAX_DIFF_LINES:
        out = [*out[:MAX_DIFF_LINES], f"… {len(out) - MAX_DIFF_LINES} more diff lines"]
    # Lone surrogates (undecodable bytes) cannot travel as JSON; show them as U+FFFD.
    return "\n".join(out).encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
