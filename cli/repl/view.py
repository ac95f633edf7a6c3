"""Rich rendering of a turn as it happens: streamed text, tool calls, diffs, folded output
(excerpts.py cuts long text to what the screen shows).

On a real terminal, a transient live area shows a spinner while the model thinks and, while the
answer streams, the end of the markdown block being written; each block is printed for good,
as markdown, once the next one starts, and the last when the answer is complete. Nothing is ever printed over, so long
answers and scrollback never garble; live.py draws the area so that a line rich and the
terminal count differently, or a resize mid-stream, leaves no copy of it behind. On a dumb terminal or a pipe there is no live area: text is
written as it arrives and nothing is re-rendered.

Every printed string goes through `Text` (never console markup), so brackets in file contents or
command output are shown as they are, and text from outside passes through `visible` first, so
its control characters are shown, not obeyed.

A wait the person did not ask for says what it waits for: on a real terminal the spinner's label
(with the seconds waited, after a few); on a dumb terminal or a pipe, where there is no spinner,
one line once the wait has lasted STATUS_AFTER_S.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from rich.console import Console, ConsoleDimensions, ConsoleOptions, RenderResult
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from scribe.agent.protocol import (
    AssistantMessage,
    Compressed,
    CompressionWait,
    Event,
    ModelCallStarted,
    Notice,
    Retrying,
    TextDelta,
    TextWithdrawn,
    ToolCall,
    ToolDone,
    TurnEnded,
    Waiting,
)
from scribe.tools.base import OutputTail
from scribe.tools.mcp.spec import PREFIX as MCP_PREFIX
from scribe.tools.textio import plural
from scribe.tools.todo import NAME as TODO
from scribe.tools.todo import current_todos

from ..compressed import compressed_line
from ..visible import VisibleStream, visible
from ..visible_console import VisibleConsole
from .excerpts import (
    Hanging,
    MarkdownTail,
    complete_blocks,
    diff_text,
    first_line,
    fold,
    markdown_of,
    message_excerpt,
)
from .habits import todo_text, working_on
from .live import Unpadded, fitted_live

END_NOTES = {
    "max_turns": "stopped at max_turns model calls in this turn; say 'go on' to continue",
    "refusal": "the model declined to answer",
    "max_tokens": "the answer was cut at max_tokens",
}


# A plain terminal shows a wait's status line once it has lasted this long (a spinner would
# show it at once, but a line on every model call would be noise).
STATUS_AFTER_S = 1.0
LIVE_LINES = 5
ELAPSED_AFTER_S = 3.0  # the spinner adds the seconds waited from then on
THINKING = "thinking…  (Esc or Ctrl-C cancels)"
TYPED = "next › "  # what is typed during a turn, for the next prompt, under the live area
RUNNING = "running…  (Esc or Ctrl-C cancels)"


def waiting_for_mcp(summary: str) -> str:
    """The spinner's words while an MCP call runs: which server it waits for (from the summary)."""
    return f"waiting for MCP server {visible(summary.split(' · ')[0])}…  (Esc or Ctrl-C cancels)"


def live_lines(height: int) -> int:
    """How many lines of the block being streamed the live area shows: few, so that rewrapped
    by a resize to a quarter of the width, they still fit above the cursor (a terminal that
    rewraps keeps the cursor's row and puts what does not fit above it in the scrollback, out
    of a redraw's reach)."""
    return max(min(LIVE_LINES, (height - 4) // 4), 1)


class TerminalConsole(VisibleConsole):
    """The REPL's console. rich itself honours NO_COLOR and TERM=dumb (no colour, no live
    area), but takes a dumb terminal to be 80 columns wide; this one asks the terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = super().size
        if self.is_dumb_terminal and self._width is None:
            try:
                columns, lines = os.get_terminal_size(self.file.fileno())
            except (AttributeError, ValueError, OSError):  # not a terminal after all
                return dims
            if columns > 0:
                return ConsoleDimensions(columns, self._height or lines or dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size  # as rich's own setter: a fixed size


def make_console() -> Console:
    # On a terminal, the terminal's own size: rich takes an exported COLUMNS or LINES (a
    # wrapper's, a multiplexer's) as the width for good, and the live area would be drawn for
    # a width the terminal no longer has once it is resized.
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} if sys.stdout.isatty() else None
    return TerminalConsole(highlight=False, no_color=bool(os.environ.get("NO_COLOR")) or None, _environ=environ)


class _Waiting:
    """A spinner and what it waits for, with the seconds waited once they are worth saying
    (`waited_s`: how long it had been waited for already when the spinner came up)."""

    def __init__(self, label: str, waited_s: float = 0.0) -> None:
        self.label, self.started = label, time.monotonic() - waited_s
        self.spinner = Spinner("dots", Text(label, style="dim"))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        waited = time.monotonic() - self.started
        suffix = f"  {waited:.0f} s" if waited >= ELAPSED_AFTER_S else ""
        self.spinner.update(text=Text(self.label + suffix, style="dim"))
        yield self.spinner


class _Running(_Waiting):
    """The spinner of a running command, and under it the last lines it has printed so far."""

    def __init__(self, label: str, tail: OutputTail, count: int) -> None:
        super().__init__(label)
        self.tail, self.count = tail, count

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from super().__rich_console__(console, options)
        for line in self.tail.lines(self.count):
            yield Text(f"  │ {visible(line)}", style="dim", no_wrap=True, overflow="ellipsis")


class _WithTyped:
    """The live area's drawing, and under it what the person has typed for the next prompt so
    far (keys.py keeps it), as it is typed: the end of it, on one line."""

    def __init__(self, inner: Any, typed: Callable[[], str]) -> None:
        self.inner, self.typed = inner, typed

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.inner
        text = visible(self.typed().replace("\n", " ↵ "))
        if text:
            room = max(options.max_width - len(TYPED) - 2, 8)
            shown = text if len(text) <= room else "…" + text[-(room - 1):]
            yield Text(TYPED + shown, style="dim")


class View:
    def __init__(self, console: Console) -> None:
        self.console = console
        # A live area needs cursor movement: a real, non-dumb terminal.
        self.live_ok = console.is_interactive
        self._live: Live | None = None
        self._text = ""  # assistant text of the model call in progress
        self._shown = 0  # live mode: how much of it is printed for good (its complete blocks)
        self._midline = False  # plain mode: the last write did not end a line
        self._stream = VisibleStream()  # plain mode: the streamed text as written
        # Tool calls whose effect was already shown in an approval preview.
        self.previewed: set[str] = set()
        # The item of the model's task list in progress (todo tool), named while it thinks.
        self.task: str | None = None
        # Plain mode: the status line a wait will print if it lasts (see `busy`).
        self._status: threading.Timer | None = None
        self._status_lock = threading.Lock()
        # What the person has typed during the turn, for the next prompt (keys.py): the live area
        # shows it under what it draws.
        self.typed: Callable[[], str] = lambda: ""

    # -- the live area ------------------------------------------------------------------------

    def busy(self, label: str) -> None:
        """Say what is being waited for until the next output: a spinner with `label` on a real
        terminal; elsewhere the label as one line, if the wait lasts STATUS_AFTER_S. While the
        model thinks, the task it said it is working on (its todo list) is named."""
        if label == THINKING and self.task:
            label = f"{visible(self.task)}…  (Esc or Ctrl-C cancels)"
        if self.live_ok:
            self._show(_Waiting(label))
            return
        self._quiet()
        timer = threading.Timer(STATUS_AFTER_S, self._say_status, (label,))
        timer.daemon = True
        with self._status_lock:
            self._status = timer
        timer.start()

    def running(self, call: ToolCall) -> None:
        """A command runs: the spinner, and on a real terminal its last lines under it as they
        come (they are printed whole, folded, when it ends)."""
        if call.output is None or not self.live_ok:
            self.busy(RUNNING)
            return
        self._show(_Running(RUNNING, call.output, live_lines(self.console.height)))

    def _say_status(self, label: str) -> None:
        with self._status_lock:
            if self._status is None or self._status is not threading.current_thread():
                return  # the wait ended (or another began) as the timer fired
            self._status = None
            if self._midline:
                self.console.file.write("\n")
                self._midline = False
            self.console.print(Text(label, style="dim"))

    def _quiet(self) -> None:
        """The wait is over: a status line not yet printed never will be."""
        with self._status_lock:
            timer, self._status = self._status, None
        if timer is not None:
            timer.cancel()

    def pause(self) -> None:
        """Settle the screen so something else (a question, a command's output) may use it."""
        self._quiet()
        self._stop_live()
        if self._text:
            if self.live_ok:
                if self._text[self._shown:].strip():
                    self.console.print(Unpadded(markdown_of(visible(self._text[self._shown:]))))
            else:
                rest = self._stream.flush()
                if self._midline or rest:
                    self.console.file.write(rest + "\n")
                    self.console.file.flush()
            self._text, self._midline, self._shown = "", False, 0

    def _show(self, renderable: Any) -> None:
        renderable = _WithTyped(renderable, self.typed)
        if self._live is None:
            self._live = fitted_live(self.console, renderable)
            self._live.start()
        else:
            self._live.update(renderable)

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    # -- agent events -------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._text += event.text
            if self.live_ok:
                self._stream_live()
            else:
                self._quiet()
                with self._status_lock:
                    self.console.file.write(self._stream.feed(event.text))
                    self.console.file.flush()
                    self._midline = not event.text.endswith("\n")
        elif isinstance(event, ModelCallStarted):
            self.pause()
            self.busy(THINKING)
        elif isinstance(event, AssistantMessage):
            self.pause()
        elif isinstance(event, ToolCall):
            self.pause()
            self.console.print(Text.assemble(("→ ", "dim"), (visible(event.name), "bold"), " ",
                                             visible(event.summary)))
            if event.name == "run_command":
                self.running(event)
            elif event.name.startswith(MCP_PREFIX):
                self.busy(waiting_for_mcp(event.summary))
        elif isinstance(event, ToolDone):
            self.pause()
            self._tool_result(event)
            # The next call may be a while in coming (memory compression goes first): say so.
            self.busy(THINKING)
        elif isinstance(event, Retrying):
            # The text shown so far stays: the retried call sends only what goes past it, or
            # withdraws it (TextWithdrawn) if its answer differs. On a live terminal the line
            # goes above the answer, which streams on and is printed whole at the end.
            if self._live is not None and self._text:
                self.console.print(Text(visible(f"retrying: {event.reason}"), style="yellow"))
            else:
                self.warn(f"retrying: {event.reason}")
        elif isinstance(event, TextWithdrawn):
            self._stop_live()
            self._stream.flush()
            if self._midline:
                self.console.file.write("\n")
            self._text, self._midline, self._shown = "", False, 0
            self.warn("the retried answer differs from the text above; it starts again below")
        elif isinstance(event, Waiting):
            self._waiting(event)
        elif isinstance(event, CompressionWait):
            self.pause()
            self.busy(f"{event.reason}  (Esc or Ctrl-C cancels)")
        elif isinstance(event, Notice):
            self.note(event.text)
        elif isinstance(event, TurnEnded):
            self._turn_ended(event)
        elif isinstance(event, Compressed):
            self.note(compressed_line(event))

    def _stream_live(self) -> None:
        """The answer's complete blocks printed for good (above the live area), the block being
        written in the live area: all a resize can rewrap there is a few lines."""
        done = complete_blocks(self._text, self._shown)
        if done > self._shown:
            block, self._shown = self._text[self._shown:done], done
            self.console.print(Unpadded(markdown_of(visible(block))))
            self.console.print()  # the blank line between this block and the next
        self._show(MarkdownTail(self._text[self._shown:], live_lines(self.console.height)))

    def _waiting(self, event: Waiting) -> None:
        """The server has gone quiet: say who is silent, for how long it will be waited for, and
        how to stop waiting. A streaming answer stays where it is; the line goes above it."""
        line = f"waiting: {event.reason}  (Esc or Ctrl-C cancels)"
        if self._text:
            if self._live is not None:
                self.console.print(Text(visible(line), style="yellow"))
            else:
                if self._midline:
                    self.console.file.write("\n")
                    self._midline = False
                self.console.print(Text(visible(line), style="yellow"))
        elif self.live_ok:
            # The spinner counts the seconds of the silence itself, from its start.
            label = f"waiting: {event.what}; giving up after {event.timeout_s:g} s of silence  (Esc or Ctrl-C cancels)"
            self._show(_Waiting(visible(label), event.silent_s))
        else:
            self._quiet()
            self.console.print(Text(visible(line), style="dim"))

    def _turn_ended(self, event: TurnEnded) -> None:
        partial = self._text
        if event.reason == "interrupted" and partial:
            # The unfinished answer is not in the log; keep it visible but say so.
            self._stop_live()
            rest, self._text, self._shown = partial[self._shown:], "", 0
            if self.live_ok:
                self.console.print(Text(visible(rest), style="dim"))
            elif self._midline or self._stream.flush():
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
        items = current_todos([(done.call.args, result.is_error)]) if name == TODO and not done.denied else None
        if items is not None:  # the task list, whole, each time the model changes it
            self.task = working_on(items)
            self.console.print(todo_text(items), end="")
            return
        if done.denied or (result.is_error and name != "run_command"):
            self.console.print(Text("  ✗ " + first_line(result.output), style="red"))
        elif name == "edit_file" and done.call.id in self.previewed:
            lines = result.output.splitlines()
            added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
            removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
            self.console.print(Text(f"  ⎿ edited {visible(done.call.summary)} (+{added} −{removed})", style="dim"))
        elif name == "edit_file":
            self.console.print(Hanging(diff_text("\n".join(
                line for line in visible(result.output).splitlines() if not line.startswith(("---", "+++"))))), end="")
        elif name == "run_command" or name.startswith(MCP_PREFIX):
            self._command_output(result.output, result.is_error)
        elif name == "write_file":
            self.console.print(Text("  ⎿ " + first_line(result.output), style="dim"))
        else:
            count = len(result.output.splitlines())
            self.console.print(Text(f"  ⎿ {count} line{'s' if count != 1 else ''}", style="dim"))

    def _command_output(self, output: str, is_error: bool) -> None:
        head, tail, hidden = fold(visible(output))
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

    # Each may carry text from outside (a path, a server's message, a model's answer).

    def note(self, text: str) -> None:
        self.pause()
        self.console.print(Text(visible(text), style="dim"))

    def warn(self, text: str) -> None:
        self.pause()
        self.console.print(Text(visible(text), style="yellow"))

    def error(self, text: str) -> None:
        self.pause()
        self.console.print(Text("✗ " + visible(text), style="bold red"))

    def lines(self, lines: Iterable[str], style: str = "", *, soft_wrap: bool = False) -> None:
        """`soft_wrap`: no line breaks added, the terminal wraps what is too long (a path stays
        one line to copy)."""
        self.pause()
        for line in lines:
            self.console.print(Text(visible(line), style=style), soft_wrap=soft_wrap)

    def markdown(self, text: str) -> None:
        self.pause()
        if self.live_ok:
            self.console.print(Unpadded(markdown_of(visible(text))))
        else:
            self.console.print(Text(visible(text)))

    def exchanges(self, pairs: list[tuple[str, str]], max_answer_lines: int = 20) -> None:
        """Earlier exchanges of a resumed session: what was asked, what was finally answered."""
        for asked, answered in pairs:
            self.console.print(Text("› " + message_excerpt(asked), style="bold"))
            lines = visible(answered.strip()).splitlines()
            if len(lines) > max_answer_lines:
                lines = [*lines[:max_answer_lines], f"… ({plural(len(lines) - max_answer_lines, 'more line')})"]
            if lines:
                self.markdown("\n".join(lines))
            self.console.print()
