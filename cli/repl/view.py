"""Rich rendering of a turn as it happens: streamed text, tool calls, diffs, folded output.

On a real terminal, a transient live area shows a spinner while the model thinks and the tail of
the answer, rendered as markdown, while it streams; when the answer is complete the live area is
cleared and the whole answer printed once as markdown. Nothing is ever printed over, so long
answers and scrollback never garble. On a dumb terminal or a pipe there is no live area: text is
written as it arrives and nothing is re-rendered.

Every printed string goes through `Text` (never console markup), so brackets in file contents or
command output are shown as they are.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from scribe.agent.protocol import (
    AgentEvent,
    AssistantMessage,
    Compressed,
    ModelCallStarted,
    Notice,
    Retrying,
    TextDelta,
    ToolCall,
    ToolDone,
    TurnEnded,
)
from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX

# Command output shown in full up to this many lines; longer output shows head and tail.
FOLD_HEAD, FOLD_TAIL = 4, 4
DIFF_MAX_LINES = 400
END_NOTES = {
    "max_turns": "stopped at max_turns model calls in this turn; say 'go on' to continue",
    "refusal": "the model declined to answer",
    "max_tokens": "the answer was cut at max_tokens",
}


def make_console() -> Console:
    """The terminal console. rich itself honours NO_COLOR and TERM=dumb (no colour, no live area)."""
    return Console(highlight=False, no_color=bool(os.environ.get("NO_COLOR")) or None)


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


class _Tail:
    """The last `max_lines` lines of a markdown text as rendered: what fits in the live area."""

    def __init__(self, text: str, max_lines: int) -> None:
        self.text, self.max_lines = text, max_lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        # Twice the characters the area can hold is plenty to fill it after wrapping.
        source = tail_source(self.text, 2 * self.max_lines * options.max_width)
        lines = console.render_lines(Markdown(source), options, pad=False)
        for line in lines[-self.max_lines:]:
            yield from line
            yield Segment.line()


def diff_text(diff: str, indent: str = "    ", max_lines: int = DIFF_MAX_LINES) -> Text:
    """A unified diff coloured line by line (additions green, removals red, hunks cyan)."""
    out = Text()
    lines = diff.splitlines()
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
        out.append(f"{indent}… {len(lines) - max_lines} more lines\n", style="dim")
    return out


def fold(text: str, head: int = FOLD_HEAD, tail: int = FOLD_TAIL) -> tuple[list[str], list[str], int]:
    """Head lines, tail lines and how many were hidden between them."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= head + tail + 1:  # hiding a single line saves nothing
        return lines, [], 0
    return lines[:head], lines[-tail:], len(lines) - head - tail


def first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else ""


class View:
    def __init__(self, console: Console) -> None:
        self.console = console
        # A live area needs cursor movement: a real, non-dumb terminal.
        self.live_ok = console.is_interactive
        self._live: Live | None = None
        self._text = ""  # assistant text of the model call in progress
        self._midline = False  # plain mode: the last write did not end a line
        # Tool calls whose effect was already shown in an approval preview.
        self.previewed: set[str] = set()

    # -- the live area ------------------------------------------------------------------------

    def busy(self, label: str) -> None:
        """A spinner with `label` until the next output (real terminals only)."""
        if self.live_ok:
            self._show(Spinner("dots", Text(label, style="dim")))

    def pause(self) -> None:
        """Settle the screen so something else (a question, a command's output) may use it."""
        self._stop_live()
        if self._text:
            if self.live_ok:
                self.console.print(Markdown(self._text))
            elif self._midline:
                self.console.file.write("\n")
                self.console.file.flush()
            self._text, self._midline = "", False

    def _show(self, renderable: Any) -> None:
        if self._live is None:
            self._live = Live(renderable, console=self.console, transient=True, refresh_per_second=10,
                              redirect_stdout=False, redirect_stderr=False)
            self._live.start()
        else:
            self._live.update(renderable)

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    # -- agent events -------------------------------------------------------------------------

    def handle(self, event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            self._text += event.text
            if self.live_ok:
                self._show(_Tail(self._text, max(self.console.height - 4, 3)))
            else:
                self.console.file.write(event.text)
                self.console.file.flush()
                self._midline = not event.text.endswith("\n")
        elif isinstance(event, ModelCallStarted):
            self.pause()
            self.busy("thinking…  (Ctrl-C cancels)")
        elif isinstance(event, AssistantMessage):
            self.pause()
        elif isinstance(event, ToolCall):
            self.pause()
            self.console.print(Text.assemble(("→ ", "dim"), (event.name, "bold"), " ", event.summary))
            if event.name == "run_command":
                self.busy("running…  (Ctrl-C cancels)")
            elif event.name.startswith(MCP_PREFIX):
                self.busy(f"waiting for MCP server {event.summary.split(' · ')[0]}…  (Ctrl-C cancels)")
        elif isinstance(event, ToolDone):
            self.pause()
            self._tool_result(event)
        elif isinstance(event, Retrying):
            # The call starts over and streams its answer again: drop what it had shown so far.
            self._stop_live()
            if self._midline:
                self.console.file.write("\n")
            self._text, self._midline = "", False
            self.warn(f"retrying: {event.reason}")
        elif isinstance(event, Notice):
            self.note(event.text)
        elif isinstance(event, TurnEnded):
            self._turn_ended(event)
        elif isinstance(event, Compressed):
            self.note(compressed_line(event))

    def _turn_ended(self, event: TurnEnded) -> None:
        partial = self._text
        if event.reason == "interrupted" and partial:
            # The unfinished answer is not in the log; keep it visible but say so.
            self._stop_live()
            self._text = ""
            if self.live_ok:
                self.console.print(Text(partial, style="dim"))
            elif self._midline:
                self.console.file.write("\n")
            self._midline = False
        self.pause()
        if event.reason == "interrupted":
            self.warn("interrupted" + (" (the partial answer above is not kept)" if partial else ""))
        elif event.reason == "error":
            self.error(event.error or "the turn failed")
        elif event.reason in END_NOTES:
            self.warn(END_NOTES[event.reason])

    def _tool_result(self, done: ToolDone) -> None:
        result, name = done.result, done.call.name
        if done.denied or (result.is_error and name != "run_command"):
            self.console.print(Text("  ✗ " + first_line(result.output), style="red"))
        elif name == "edit_file" and done.call.id in self.previewed:
            lines = result.output.splitlines()
            added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
            removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
            self.console.print(Text(f"  ⎿ edited {done.call.summary} (+{added} −{removed})", style="dim"))
        elif name == "edit_file":
            self.console.print(diff_text("\n".join(
                line for line in result.output.splitlines() if not line.startswith(("---", "+++")))), end="")
        elif name == "run_command" or name.startswith(MCP_PREFIX):
            self._command_output(result.output, result.is_error)
        elif name == "write_file":
            self.console.print(Text("  ⎿ " + first_line(result.output), style="dim"))
        else:
            count = len(result.output.splitlines())
            self.console.print(Text(f"  ⎿ {count} line{'s' if count != 1 else ''}", style="dim"))

    def _command_output(self, output: str, is_error: bool) -> None:
        head, tail, hidden = fold(output)
        rows = [(line, "dim") for line in head]
        if hidden:
            rows.append((f"… {hidden} more line{'s' if hidden != 1 else ''} …", "italic dim"))
        rows += [(line, "dim") for line in tail]
        if is_error and rows:
            rows[-1] = (rows[-1][0], "red")  # a failed command's last line says why
        text = Text()
        for line, style in rows:
            text.append(f"  │ {line}\n", style=style)
        self.console.print(text, end="")

    # -- one-line messages --------------------------------------------------------------------

    def note(self, text: str) -> None:
        self.pause()
        self.console.print(Text(text, style="dim"))

    def warn(self, text: str) -> None:
        self.pause()
        self.console.print(Text(text, style="yellow"))

    def error(self, text: str) -> None:
        self.pause()
        self.console.print(Text("✗ " + text, style="bold red"))

    def lines(self, lines: Iterable[str], style: str = "") -> None:
        self.pause()
        for line in lines:
            self.console.print(Text(line, style=style))

    def markdown(self, text: str) -> None:
        self.pause()
        if self.live_ok:
            self.console.print(Markdown(text))
        else:
            self.console.print(Text(text))

    def exchanges(self, pairs: list[tuple[str, str]], max_answer_lines: int = 20) -> None:
        """Earlier exchanges of a resumed session: what was asked, what was finally answered."""
        for asked, answered in pairs:
            self.console.print(Text("› " + asked.strip(), style="bold"))
            lines = answered.strip().splitlines()
            if len(lines) > max_answer_lines:
                lines = [*lines[:max_answer_lines], f"… ({len(lines) - max_answer_lines} more lines)"]
            if lines:
                self.markdown("\n".join(lines))
            self.console.print()


def compressed_line(event: Compressed) -> str:
    return (f"memory: {event.kind} of events {event.seq_from}–{event.seq_to}: "
            f"{event.tokens_before:,} → {event.tokens_after:,} tokens")
