"""`@path` in a person's message: the named workspace files, attached to the message.

The message is sent as typed, followed by each file's content in an `<attached>` block, and the
whole is the user event's text: the log holds every byte the model is sent, and render stays a
pure function of the log. What is attached passes through the same redaction as a tool's
output. A file is attached once per message, at most ATTACH_CHARS of it (the rest is named,
for read_file), and a message attaches at most ATTACH_TOTAL_CHARS in all.

An image (PNG, JPEG, GIF or WebP, by its name or its first bytes) is attached as an image: sized
down to what the API takes and sent before the message's text (workspace/images.py); the session
keeps its bytes beside the log (log/attachments.py) and the user event names it. At most
ATTACH_IMAGES images go with one message.

Refused, with one line each: paths outside the workspace (allowed_paths included: the person
names files of this workspace), inside `.git/` or `.scribe/`, folders, anything but a regular file (a FIFO), binary files that
are not images, images that are not what their name says, do not decode or are too large. A word
after `@` that names nothing is left as typed (`@someone`, `@pytest.mark.slow`); one that looks
like a file path (`@src/x.py`, `@notes.md`) is named as not found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from scribe.tools.base import ToolContext, ToolError
from scribe.tools.paths import display_path, resolve_path
from scribe.tools.textio import SNIFF_BYTES, binary_kind, count_lines, plural
from scribe.workspace.images import (
    ImageRefused,
    PreparedImage,
    looks_like_image,
    prepare_image,
    read_image_file,
)

ATTACH_CHARS = 40_000
ATTACH_TOTAL_CHARS = 100_000
ATTACH_IMAGES = 20
_MENTION = re.compile(r'(?:^|(?<=\s))@("[^"\n]+"|[^\s"]+)')
_TRAILING = ".,;:!?)]}'"


@dataclass(frozen=True)
class AttachedFile:
    path: str
    lines: int  # lines of the file
    shown_lines: int  # lines attached (fewer when it was cut)
    cut: bool

    def describe(self) -> str:
        if not self.cut:
            return f"attached {self.path} ({plural(self.lines, 'line')})"
        return (f"attached {self.path}: its first {self.shown_lines:,} of {self.lines:,} lines "
                f"(cut at {ATTACH_CHARS:,} characters)")


@dataclass(frozen=True)
class Attached:
    text: str  # what the user event holds: the message, then the attached files
    files: list[AttachedFile] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # one line each: `@x: why it is not attached`
    images: list[PreparedImage] = field(default_factory=list)  # sent before the text
    # Where in `text` the attached files begin (None: none are): what comes before is the
    # message as typed, all that telemetry may export of it (telemetry/readings.py).
    attached_at: int | None = None


def mentioned(text: str) -> list[str]:
    """The paths named with `@` in `text`, in order (quotes taken off)."""
    return [m.group(1).strip('"') for m in _MENTION.finditer(text)]


def attach(text: str, ctx: ToolContext) -> Attached:
    """`text` with the files its `@path` words name attached (see the module's docstring)."""
    files: list[AttachedFile] = []
    refused: list[str] = []
    images: list[PreparedImage] = []
    blocks: list[str] = []
    seen: set[str] = set()
    room = ATTACH_TOTAL_CHARS
    for word in mentioned(text):
        found = _existing(word, ctx)
        if found is None:
            if _looks_like_a_file(word.rstrip(_TRAILING)):
                refused.append(f"@{word}: no such file in the workspace; not attached (Tab completes @ paths)")
            continue
        name, target = found
        if name in seen:
            continue
        seen.add(name)
        if looks_like_image(target):
            _attach_image(word, name, target, ctx, images, refused)
            continue
        try:
            why = _refusal(ctx, name, target)
            data = b"" if why else target.read_bytes()
        except OSError as exc:
            why = f"cannot be read ({(exc.strerror or str(exc)).lower()})"
        if why:
            refused.append(f"@{word}: {why}; not attached")
            continue
        content = ctx.redact(data.decode("utf-8", errors="replace"))
        if room <= 0:
            refused.append(f"@{word}: the message already attaches {ATTACH_TOTAL_CHARS:,} characters; not attached")
            continue
        limit = min(ATTACH_CHARS, room)
        shown = content if len(content) <= limit else content[:limit].rpartition("\n")[0] + "\n"
        room -= len(shown)
        total, shown_lines = count_lines(content), count_lines(shown)
        cut = len(shown) < len(content)
        tail = (f"[cut here: lines {shown_lines + 1}-{total} are not attached; read_file shows them]\n"
                if cut else "")
        body = shown if not shown or shown.endswith("\n") else shown + "\n"
        blocks.append(f'<attached file="{name}" lines="{total}">\n{body}{tail}</attached>')
        files.append(AttachedFile(name, total, shown_lines, cut))
    if not blocks:
        return Attached(text, files, refused, images)
    typed = text.rstrip("\n")
    return Attached(typed + "\n\n" + "\n\n".join(blocks), files, refused, images, len(typed))


def _attach_image(word: str, name: str, target: Path, ctx: ToolContext, images: list[PreparedImage],
                  refused: list[str]) -> None:
    """Attach the image `word` names, or say in one line why not."""
    why = _refusal(ctx, name, target, image=True)
    if not why and len(images) >= ATTACH_IMAGES:
        why = f"a message takes at most {ATTACH_IMAGES} images"
    if not why:
        try:
            images.append(prepare_image(name, read_image_file(target.resolve())))
            return
        except ImageRefused as exc:
            why = str(exc)
    refused.append(f"@{word}: {why}; not attached")


def _looks_like_a_file(word: str) -> bool:
    """`src/x.py` or `notes.md`, not a decorator (`@pytest.mark.slow`) or a handle (`@someone`)."""
    return "/" in word or word.count(".") == 1 and not word.startswith(".")


def _existing(word: str, ctx: ToolContext) -> tuple[str, Path] | None:
    """The workspace-relative name and resolved path `word` names (trailing punctuation of the
    sentence taken off when the word itself names nothing), or None."""
    candidates = [word]
    while candidates[-1] and candidates[-1][-1] in _TRAILING:
        candidates.append(candidates[-1][:-1])
    for candidate in candidates:
        if not candidate:
            continue
        try:
            target = resolve_path(ctx, candidate)
        except ToolError:
            target = None
        raw = ctx.workspace / candidate
        if target is not None and target.exists():
            return display_path(ctx, target), target
        if raw.exists() or raw.is_symlink():  # a refused path that is there: say why below
            return candidate, raw
    return None


def _refusal(ctx: ToolContext, name: str, target: Path, *, image: bool = False) -> str:
    """Why `target` is not attached, or "" when it may be (an `image` is read as one, not as text)."""
    workspace = ctx.workspace.resolve()
    resolved = target.resolve()
    if not resolved.is_relative_to(workspace):
        return "outside the workspace"
    parts = resolved.relative_to(workspace).parts
    if ".git" in parts or ".scribe" in parts:
        return f"inside {'.git' if '.git' in parts else '.scribe'}/, which is not attached"
    if resolved.is_dir():
        return "a folder (name a file in it)"
    if not resolved.is_file():
        return "not a regular file"
    if image:
        return ""
    with resolved.open("rb") as handle:
        kind = binary_kind(handle.read(SNIFF_BYTES))
    return f"a binary file ({kind})" if kind else ""


def image_files(paths: list[Path]) -> list[PreparedImage]:
    """The images `scribe run --image` names, each prepared as `@path` prepares one. The person
    names them on the command line, so any path they can read is taken (a screenshot lives
    outside the repository); what is not a whole image of the four types, or is too large, or
    is not a regular file, is refused with an ImageRefused naming it."""
    if len(paths) > ATTACH_IMAGES:
        raise ImageRefused(f"--image: a message takes at most {ATTACH_IMAGES} images, {len(paths)} were given")
    prepared = []
    for path in paths:
        try:
            prepared.append(prepare_image(path.name, read_image_file(path)))
        except ImageRefused as exc:
            raise ImageRefused(f"--image {path}: {exc}; nothing was sent") from None
    return prepared
