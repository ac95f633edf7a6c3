"""Excerpts of long text for the screen: command output folded to its head and tail, a diff
capped in lines and coloured, the end of a streaming answer that fits the live area, a long
message as a recap shows it, a first line. Pure: text in, what to show out; everything from outside is shown through `visible`."""

from __future__ import annotations

import re

from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderResult
from rich.segment import Segment
from rich.text import Text

from scribe.tools.textio import plural

from ..visible import visible

# Command output shown in full up to this many lines; longer output shows head and tail.
FOLD_HEAD, FOLD_TAIL = 4, 4
DIFF_MAX_LINES = 400


def tail_source(text: str, limit: int) -> str:
    """The end of a markdown text, about `limit` characters from a line start: rendering all of
    a long answer ten times a second would cost more than the screen can show. A cut inside a
    fenced code block reopens the fence, so code stays code."""
    if len(text) <= limit:
        return text
    cut = text.find("\n", len(text) - limit)
    if cut < 0:
        return text[-limit:]
    tail = text[cut + 1:]
    return "```\n" + tail if text[:cut].count("```") % 2 else tail


_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def complete_blocks(text: str, start: int = 0) -> int:
    """Where the markdown blocks of `text` after `start` that are complete end: after the last
    blank line outside a code fence that a line starting flush left follows (an indented line
    may continue a list item, so the blank line before it ends nothing). `start` if none."""
    end, fenced, blank_at, at = start, False, -1, start
    while (newline := text.find("\n", at)) >= 0:
        line = text[at:newline]
        if not fenced:
            if not line.strip():
                blank_at = newline + 1
            else:
                if blank_at >= 0 and not line[:1].isspace():
                    end = blank_at
                blank_at = -1
        if _FENCE.match(line):
            fenced = not fenced
        at = newline + 1
    # a flush-left line still being written after a blank line also starts a new block
    if not fenced and blank_at >= 0 and text[at:at + 1].strip():
        end = blank_at
    return end


def markdown_of(text: str) -> ConsoleRenderable:
    """rich's rendering of markdown `text`. Imported at the first answer shown, not as the REPL
    starts: it brings markdown-it and pygments, a tenth of a second before the first prompt."""
    from rich.markdown import Markdown  # noqa: PLC0415 - see above

    return Markdown(text)


class MarkdownTail:
    """The last `max_lines` lines of a markdown text as rendered: what fits in the live area."""

    def __init__(self, text: str, max_lines: int) -> None:
        self.text, self.max_lines = text, max_lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Twice the characters the area can hold is plenty to fill it after wrapping.
        source = tail_source(self.text, 2 * self.max_lines * options.max_width)
        lines = console.render_lines(markdown_of(visible(source)), options, pad=False)
        for line in lines[-self.max_lines:]:
            yield from line
            yield Segment.line()


def diff_text(diff: str, indent: str = "    ", max_lines: int = DIFF_MAX_LINES) -> Text:
    """A unified diff coloured line by line (additions green, removals red, hunks cyan); the
    lines are file contents, so they are shown through `visible`."""
    out = Text()
    lines = visible(diff).splitlines()
    for line in lines[:max_lines]:
        if line.startswith(("+++", "---", "diff ", "index ")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = "dim"
        out.append(indent + line + "\n", style=style)
    if len(lines) > max_lines:
        out.append(f"{indent}… {plural(len(lines) - max_lines, 'more line')}\n", style="dim")
    return out


# Where a line's text starts: its indent, a diff's +/- marker, and the indent of the code after it.
_HANG = re.compile(r" *[+-]? *")


class Hanging:
    """Lines (a diff, a file's first lines) that wrap under their own text: a row a narrow
    terminal cannot hold goes on under the first character after the line's indent and diff
    marker, so the code keeps its indent instead of starting again at the left edge. The hang is
    at most half the width."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 2)
        lines = list(self.text.split("\n", allow_blank=True))
        if self.text.plain.endswith("\n"):
            lines = lines[:-1]
        out = Text(no_wrap=True, overflow="crop", end="")
        for line in lines:
            hang = min(_HANG.match(line.plain).end(), width // 2)  # type: ignore[union-attr]
            rows = line[hang:].wrap(console, width - hang) if line.cell_len > width else [line[hang:]]
            for number, row in enumerate(rows):
                row.rstrip()
                out.append_text(line[:hang] if number == 0 else Text(" " * hang))
                out.append_text(row)
                out.append("\n")
        yield out


def fold(text: str, head: int = FOLD_HEAD, tail: int = FOLD_TAIL) -> tuple[list[str], list[str], int]:
    """Head lines, tail lines and how many were hidden between them."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= head + tail + 1:  # hiding a single line saves nothing
        return lines, [], 0
    return lines[:head], lines[-tail:], len(lines) - head - tail


MESSAGE_LINES, MESSAGE_CHARS = 3, 300


def message_excerpt(text: str, max_lines: int = MESSAGE_LINES, max_chars: int = MESSAGE_CHARS) -> str:
    """A message as a recap shows it: whole if short, else its first line (cut) and its size."""
    text = text.strip()
    lines = text.splitlines()
    if len(lines) <= max_lines and len(text) <= max_chars:
        return visible(text)
    first = lines[0] if lines else ""
    first = first if len(first) <= 100 else first[:99] + "…"
    return f"{visible(first)} … [{plural(len(lines), 'line')}, {len(text):,} chars]"


def first_line(text: str) -> str:
    stripped = visible(text.strip())  # before splitting: a lone CR is shown, not a line break
    return stripped.splitlines()[0] if stripped else ""
