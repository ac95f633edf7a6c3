"""How a tool output enters the prompt: whole, or as a preview the model reads on from.

The log keeps every output whole. What a request shows of a long one is a preview: a first line
naming the tool, the output's size in lines and characters, what is shown, the event's seq and
how `recall` reads the rest; then the output's first lines and, where the end matters, its last
ones. A command's output keeps both ends (a test run's verdict, an error, the exit code are at
the end); a page, a listing or an MCP answer keeps its head. Everything here is a pure function
of the event and the session's recorded config, so a preview is the same bytes in every
request, in any process, and `scribe log prompt --at` rebuilds it exactly.

What the model asked for in full is not cut below what an exact edit needs: `read_file` answers
with the lines asked for (paged by read_file itself: at most 2,000 lines and 40,000 characters,
ending with the offset to read on from), and `recall` with what it was asked to read back
(bounded by recall itself); both are shown whole. Once their turn has settled (see Settled) they
are previewed like the rest: the turn that needed them is over and `recall` has them.

Sessions recorded before previews (no `preview_chars` in their config) keep their own form:
head and tail up to `render_output_chars` with a line naming the seq to recall (`elide`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from scribe.log.events import BEFORE_OUTPUT_CHARS, RecordedConfig, ToolResultEvent

NO_OUTPUT = "(no output)"

# whole: shown as returned (the tool bounds it); head: the first lines; head_and_tail: the first
# lines and the last ones.
Shape = Literal["whole", "head", "head_and_tail"]
SHAPES: dict[str, Shape] = {"read_file": "whole", "recall": "whole", "run_command": "head_and_tail"}
# Of a preview that keeps both ends, the share of its characters given to the head.
HEAD_SHARE = 2 / 5
# The lines a preview suggests reading next.
NEXT_LINES = 100


def shape_of(tool: str) -> Shape:
    return SHAPES.get(tool, "head")


@dataclass(frozen=True)
class Settled:
    """Tool outputs before seq `before` had settled (their turn had ended) when the latest
    observation or reflection was made; they are shown at most `chars` long.

    That chunk rewrote everything after it in the cache anyway, so shortening them then costs
    nothing extra, and it holds until the next chunk: between chunks the bytes do not change.
    Their turn is over, the observations say what they showed, and `recall` has them whole."""

    before: int = -1
    chars: int = BEFORE_OUTPUT_CHARS

    def covers(self, event: ToolResultEvent) -> bool:
        return event.seq < self.before


# Nothing settled: every output is shown at its session's size.
UNSETTLED = Settled()


@dataclass(frozen=True)
class OutputView:
    """How one session shows tool outputs, from its recorded config: previews of `chars`, or
    (`previews` false: a log from before them) head and tail elided at `chars`."""

    chars: int
    previews: bool = True

    @classmethod
    def of(cls, recorded: RecordedConfig) -> OutputView:
        if recorded.preview_chars is None:
            return cls(recorded.render_output_chars, previews=False)
        return cls(recorded.preview_chars)

    def text(self, event: ToolResultEvent, settled: Settled = UNSETTLED) -> str:
        """What a request shows of `event`'s output."""
        if not event.output:
            return NO_OUTPUT
        if not self.previews:
            # recall answers are bounded by recall itself; eliding one would hide what was asked for
            limit = len(event.output) if event.tool == "recall" else self.chars
            return elide(event.output, min(limit, settled.chars) if settled.covers(event) else limit, event.seq)
        shape, chars = shape_of(event.tool), self.chars
        if settled.covers(event):
            shape, chars = ("head" if shape == "whole" else shape), min(chars, settled.chars)
        if shape == "whole":
            return event.output
        return preview(event.output, chars, event.seq, event.tool, shape)


def preview(text: str, chars: int, seq: int, tool: str, shape: Shape = "head") -> str:
    """`text` as a preview of about `chars` characters of it (whole lines), under a line saying
    what it is and how to read the rest; `text` itself when the preview would not be shorter."""
    if len(text) <= chars:
        return text
    lines = text.splitlines(keepends=True)
    head_budget = chars if shape == "head" else int(chars * HEAD_SHARE)
    head = _fitting(lines, head_budget)
    # A first line longer than the head's share: its beginning stands for the head.
    body = "".join(head) if head else lines[0][:head_budget]
    rest = lines[len(head) if head else 1:]
    tail = _fitting(rest[::-1], chars - len(body))[::-1] if shape == "head_and_tail" else []
    total, gap_from, gap_to = len(lines), len(head) + 1, len(lines) - len(tail)
    shown = [f"lines 1-{len(head):,}" if len(head) > 1 else "line 1" if head else
             f"the first {len(body):,} characters of line 1"]
    if tail:
        word = "" if len(head) > 1 else "lines " if len(tail) > 1 else "line "
        shown.append(f"{word}{gap_to + 1:,}-{total:,}" if len(tail) > 1 else f"{word}{total:,}")
    if not head:
        missing = "the rest of line 1" + (f" and lines 2-{gap_to:,}" if gap_to > 1 else "")
    else:
        missing = f"lines {gap_from:,}-{gap_to:,}" if gap_to > gap_from else f"line {gap_from:,}"
    reads = f"{gap_from}-{min(gap_to, gap_from + NEXT_LINES - 1)}"
    note = (f"[{tool} output: {total:,} {'line' if total == 1 else 'lines'}, {len(text):,} characters; shown "
            f"here: {' and '.join(shown)}. The whole output is event {seq} of this session's log: "
            f'recall {{"seq": {seq}, "lines": "{reads}"}} reads lines of it, '
            f'recall {{"seq": {seq}, "query": "..."}} finds lines in it.]\n')
    if not body.endswith("\n"):
        body += "\n"
    result = f"{note}{body}[… {missing} not shown …]\n{''.join(tail)}"
    return result if len(result) < len(text) else text


def _fitting(lines: list[str], budget: int) -> list[str]:
    """The leading `lines` whose total length is within `budget`."""
    kept: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > budget:
            break
        kept.append(line)
        used += len(line)
    return kept


def elide(text: str, limit: int, seq: int) -> str:
    """Head and tail of a long output, with a line naming the event to `recall` for the rest:
    how sessions recorded before previews show a long output."""
    if len(text) <= limit:
        return text
    lines = text.splitlines(keepends=True)
    head_budget, tail_budget = limit * 2 // 5, limit * 3 // 5
    head = _fitting(lines, head_budget)
    tail = _fitting(lines[len(head):][::-1], tail_budget)[::-1]
    if not head and not tail:  # one enormous line
        head, tail = [text[:head_budget]], [text[-tail_budget:]]
        hidden_lines = 0
    else:
        hidden_lines = len(lines) - len(head) - len(tail)
    hidden_chars = len(text) - sum(map(len, head)) - sum(map(len, tail))
    marker = (f"[… {hidden_lines} lines ({hidden_chars} characters) elided; "
              f"recall(seq_from={seq}, seq_to={seq}) returns the whole output …]\n")
    joined_head = "".join(head)
    if joined_head and not joined_head.endswith("\n"):
        joined_head += "\n"
    return joined_head + marker + "".join(tail)
