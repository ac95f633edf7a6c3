"""Pieces of the REPL on their own: completion, the turn driver's Ctrl-C forwarding, the
command tool under a real SIGINT, the previews and the numbers."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from rich.console import Console

from builders import session_header
from helpers import SCRIBE, agent_on, events_of, running, sleep_argv, wait_for
from scribe.agent.compression.compressor import ContextSize
from scribe.agent.driver import drive
from scribe.agent.loop import TurnLoop
from scribe.agent.protocol import (
    AgentEvent,
    AssistantMessage,
    ModelCallStarted,
    TextDelta,
    ToolCall,
    ToolDone,
    TurnEnded,
)
from scribe.cli.repl.approve import Preview, preview
from scribe.cli.repl.excerpts import fold, tail_source
from scribe.cli.repl.input import ReplCompleter
from scribe.cli.repl.records import last_exchanges
from scribe.cli.repl.stats import LEVELS, dollars, numbers, toolbar_fields, toolbar_text
from scribe.cli.repl.view import STATUS_AFTER_S, View
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.events import AssistantEvent, InterruptEvent, ToolResultEvent, UsageEvent
from scribe.model.window import ContextWindow
from scribe.settings.values import Settings
from scribe.tools.base import CommandInterrupted, ToolContext
from scribe.tools.command import RunCommand


def completions(workspace: Path, text: str, tab: bool = False) -> list[str]:
    completer = ReplCompleter(workspace, lambda: {"stats": "numbers", "resume": "sessions", "reflect": "memory"})
    found = completer.get_completions(Document(text), CompleteEvent(completion_requested=tab))
    return [c.text for c in found]


def test_completion_of_commands_and_paths(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("")
    (workspace / "src" / "make.py").write_text("")
    (workspace / ".env").write_text("")
    assert completions(workspace, "/re") == ["/resume", "/reflect"]
    assert completions(workspace, "/stats now") == []
    assert completions(workspace, "look at @sr") == ["src/"]
    assert completions(workspace, "look at @src/ma") == ["src/main.py", "src/make.py"]
    assert completions(workspace, "@") == ["README.md", "src/"]  # no .git, .scribe or dot-files
    assert completions(workspace, "@.") == [".env"]
    assert completions(workspace, "open ./sr") == []  # a bare path waits for Tab
    assert completions(workspace, "open ./sr", tab=True) == ["./src/"]
    assert completions(workspace, "fix src/m", tab=True) == ["src/main.py", "src/make.py"]
    assert completions(workspace, "@nowhere/x") == []


def _agent(workspace: Path, server: FakeMessagesServer, monkeypatch: pytest.MonkeyPatch) -> TurnLoop:
    return agent_on(server, workspace, Settings(permission_mode="full-auto", max_retries=0), monkeypatch)


def test_ctrl_c_while_an_event_is_shown_is_recorded_by_the_agent(
        workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    script = [Reply([tool_use_block("write_file", {"path": "never.txt", "content": "x"})])]
    with FakeMessagesServer(script) as server:
        agent = _agent(workspace, server, monkeypatch)
        shown: list[AgentEvent] = []

        def show(event: AgentEvent) -> None:
            shown.append(event)
            if isinstance(event, ToolCall):
                raise KeyboardInterrupt  # as if Ctrl-C landed while the tool line was drawn

        try:
            ended = drive(agent.turn("write it"), show)
        finally:
            agent.session.close()
    assert ended.reason == "interrupted" and isinstance(shown[-1], TurnEnded)
    assert not (workspace / "never.txt").exists()
    events = events_of(agent.session.path)
    interrupt = next(e for e in events if isinstance(e, InterruptEvent))
    assert interrupt.tool_use_ids == [script[0].blocks[0]["id"]]
    assert not any(isinstance(e, ToolResultEvent) for e in events)


def test_sigint_while_a_command_runs_kills_its_process_group(workspace: Path) -> None:
    """The command runs in its own session, so the terminal's Ctrl-C never reaches it: the
    KeyboardInterrupt in scribe's main thread must take down everything it started."""
    background, foreground = sleep_argv(31), sleep_argv(32)
    interrupt = threading.Thread(target=lambda: wait_for(lambda: bool(running(*background) and running(*foreground)))
                                 and os.kill(os.getpid(), signal.SIGINT))
    interrupt.start()
    with pytest.raises(CommandInterrupted) as stopped:
        RunCommand().run({"command": f"echo started; {' '.join(background)} & {' '.join(foreground)}"},
                         ToolContext(workspace=workspace))
    interrupt.join()
    # what it printed before Ctrl-C is kept, and says how it ended
    assert stopped.value.output.text == "started\n[cancelled; the command and the processes it started were ended]"
    assert wait_for(lambda: not running(*background) and not running(*foreground))


def test_previews_show_what_a_call_would_do(workspace: Path) -> None:
    ctx = ToolContext(workspace=workspace)
    edit = ToolCall("t1", "edit_file", {"path": "README.md", "old_text": "test", "new_text": "real"}, "README.md")
    shown = preview(edit, ctx)
    assert shown.failure is None and shown.text is not None
    assert "-# test workspace" in shown.text.plain and "+# real workspace" in shown.text.plain
    write = ToolCall("t3", "write_file", {"path": "README.md", "content": "a\nb\n"}, "README.md")
    assert "overwrites README.md: 2 lines, 4 bytes" in str(preview(write, ctx).text)
    assert preview(ToolCall("t5", "run_command", {"command": "ls"}, "ls"), ctx) == Preview()
    long = preview(ToolCall("t6", "run_command", {"command": "ls\npwd"}, "ls …"), ctx).text
    assert long is not None and "$ ls" in long.plain and "$ pwd" in long.plain
    # a CRLF file: the model's "\n" still matches once, as the tool will find
    (workspace / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    crlf = ToolCall("t7", "edit_file", {"path": "dos.txt", "old_text": "one\ntwo", "new_text": "x"}, "dos.txt")
    assert preview(crlf, ctx).failure is None


@pytest.mark.parametrize(("tool", "args", "why"), [
    ("edit_file", {"path": "README.md", "old_text": "absent", "new_text": "x"}, "old_text not found in README.md"),
    ("edit_file", {"path": "twice.txt", "old_text": "a", "new_text": "b"}, "old_text matches 2 times"),
    ("edit_file", {"path": "nowhere.txt", "old_text": "a", "new_text": "b"}, "file not found: nowhere.txt"),
    ("edit_file", {"path": "README.md", "old_text": "x"}, "missing required argument 'new_text'"),
    ("write_file", {"path": "/etc/passwd", "content": ""}, "path '/etc/passwd' is outside the workspace"),
    ("write_file", {"path": ".git/config", "content": ""}, "inside .git/"),
    ("write_file", {"path": "README.md/inner", "content": ""}, "README.md is a file, not a directory"),
])
def test_a_preview_knows_the_calls_the_tool_will_refuse(workspace: Path, tool: str, args: dict[str, str],
                                                         why: str) -> None:
    (workspace / "twice.txt").write_text("a a\n")
    shown = preview(ToolCall("t1", tool, args, str(args.get("path"))), ToolContext(workspace=workspace))
    assert shown.failure is not None and why in shown.failure, shown
    assert shown.text is None


def test_fold_keeps_head_and_tail() -> None:
    assert fold("a\nb\nc\n") == (["a", "b", "c"], [], 0)
    head, tail, hidden = fold("\n".join(str(n) for n in range(1, 101)))
    assert head == ["1", "2", "3", "4"] and tail == ["97", "98", "99", "100"] and hidden == 92


def test_toolbar_numbers_come_from_the_log(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeMessagesServer([Reply.text("one"), Reply.text("two")]) as server:
        agent = _agent(workspace, server, monkeypatch)
        for prompt in ("first", "second"):
            drive(agent.turn(prompt), lambda event: None)
        agent.session.close()
    n = numbers(agent.session.events, "ask", ContextSize(fixed=1000, observations=0, raw=20))
    billed = server.requests[-1].usage
    prompt = billed["input_tokens"] + billed["cache_read_input_tokens"] + billed["cache_creation_input_tokens"]
    assert n.totals.calls == 2 and n.last_hit == billed["cache_read_input_tokens"] / prompt
    assert n.cost > 0 and 0 < n.session_hit < n.last_hit  # type: ignore[operator]
    bar = toolbar_text(n)
    assert bar.startswith(" claude-sonnet-5-5 │ ask │ $0.0")
    assert "│ context ~1.0k (obs 0 · raw 20) │ cache " in bar
    assert last_exchanges(agent.session.events, 1) == [("second", "two")]


def test_without_a_terminal_scribe_points_to_run(tmp_path: Path) -> None:
    done = subprocess.run([SCRIBE], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and "use `scribe run PROMPT`" in done.stderr


def test_the_streaming_tail_keeps_code_fenced() -> None:
    text = "intro\n\n```python\n" + "".join(f"line_{n} = {n}\n" for n in range(500)) + "```\n"
    assert tail_source(text, len(text)) == text
    tail = tail_source(text, 100)
    assert tail.startswith("```\nline_") and len(tail) < 120
    assert tail_source("para one\n\n" + "word " * 100, 50).startswith("word")


def test_the_view_on_a_live_terminal_streams_then_prints_markdown_once() -> None:
    out = io.StringIO()
    view = View(Console(file=out, width=80, height=24, force_terminal=True, force_interactive=True, no_color=True))
    assistant = AssistantEvent(seq=2, ts="t", content=[text_block("# Title\n\nSome **bold** words.")],
                               stop_reason="tool_use")
    usage = UsageEvent(seq=3, ts="t", purpose="agent", model="m", input=1, cache_read=0, cache_write=0, output=1)
    call = ToolCall("t1", "run_command", {"command": "seq 20"}, "seq 20")
    result = ToolResultEvent(seq=4, ts="t", tool_use_id="t1", tool="run_command",
                             output="".join(f"{n}\n" for n in range(1, 21)))
    for event in [ModelCallStarted(1), TextDelta("# Title\n\nSome **bo"), TextDelta("ld** words."),
                  AssistantMessage(assistant, usage), call, ToolDone(call, result), TurnEnded("end_turn", "", 1)]:
        view.handle(event)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert plain.count("Some bold words.") >= 1 and "**" not in plain.split("Some bold words.")[-1]
    assert "│ … 12 more lines …" in plain and "│ 20" in plain
    assert view._live is None  # nothing left animating


def test_a_cancelled_command_keeps_what_it_printed_as_its_result(workspace: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    script = [Reply([tool_use_block("run_command", {"command": "echo starting; sleep 30"}),
                     tool_use_block("list_files", {})])]
    with FakeMessagesServer(script) as server:
        agent = _agent(workspace, server, monkeypatch)
        timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            ended = [e for e in agent.turn("run it") if isinstance(e, TurnEnded)][-1]
        finally:
            timer.join()
            agent.session.close()
    assert ended.reason == "interrupted"
    events = events_of(agent.session.path)
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.output.startswith("starting\n") and "[cancelled; the command and the processes it started were ended]" in result.output
    assert result.is_error
    # the call that never ran is closed by the interrupt; nothing is left open
    interrupt = next(e for e in events if isinstance(e, InterruptEvent))
    assert interrupt.tool_use_ids == [script[0].blocks[1]["id"]]


def test_the_repl_and_the_agent_load_without_the_sdk_until_a_call_needs_it() -> None:
    """The SDK's import takes seconds: the prompt must not wait for it. A client made before it
    is loaded imports it on its first call."""
    code = (
        "import sys\n"
        "import scribe.cli.repl.repl, scribe.agent.loop, scribe.agent.opening\n"
        "from scribe.model.client import ModelClient\n"
        "client = ModelClient()\n"
        "print(client.server, client.on_anthropic)\n"  # where calls go, as the bar asks at the start
        "print('anthropic' in sys.modules)\n"
        "client.client\n"
        "print('anthropic' in sys.modules)\n"
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["127.0.0.1:9", "False", "False", "True"]


def _usage(seq: int, purpose: str, read: int, written: int) -> UsageEvent:
    # a listed model: an unknown one's cost is "unpriced" (tests/agent/test_pricing.py)
    return UsageEvent(seq=seq, ts="2026-01-01T00:00:00Z", purpose=purpose, model="claude-haiku-5-5", input=0,
                      cache_read=read, cache_write=written, output=1, latency_ms=1)


def test_the_bar_is_the_last_agent_calls_rate_and_narrows_at_field_boundaries() -> None:
    # an agent call read all from the cache; the curator's call after it read none
    header = session_header(ts="2026-01-01T00:00:00Z", created="2026-01-01T00:00:00Z", cwd="/", system="",
                            prompt_hash="")
    events = [header, _usage(1, "agent", 900, 100), _usage(2, "agent", 1000, 0), _usage(3, "curator", 0, 500)]
    n = numbers(events, "accept-edits", ContextSize(fixed=1000, observations=2000, raw=34567))
    assert n.last_hit == 1.0
    full = toolbar_text(n)
    assert "cache 100% last" in full
    said = [toolbar_fields(n, level) for level in range(LEVELS)]  # longest first
    for width in (40, 60, 80, 120):
        bar = toolbar_text(n, width)
        assert len(bar) <= width or bar == toolbar_text(n, 1), (width, bar)
        shown = [f.strip() for f in bar.split("│") if f.strip() != "…"]
        assert any(shown == fields[:len(shown)] for fields in said), bar  # whole fields, most wanted first
        assert bar.endswith(" │ … ") == (len(shown) < len(said[0]))
    assert toolbar_text(n, 40) == f" m │ accept-edits │ {dollars(n.cost)} │ … "


def test_the_cache_figure_fits_an_80_column_bar() -> None:
    """A Claude session in the REPL's mode, a 200k window, a long cost: the bar at 80 columns
    keeps every field, the cache rates of the last call and the session among them."""
    header = session_header(ts="2026-01-01T00:00:00Z", created="2026-01-01T00:00:00Z", cwd="/", system="",
                            prompt_hash="", model="claude-sonnet-5-5")
    events = [header, *(_usage(seq, "agent", 95_000, 4_000) for seq in range(1, 40))]
    # the last request as the server counted it, and an estimate (marked) where no count holds
    for mode, counted, said in (("ask", 99_000, "ctx 99k/200k"), ("accept-edits", None, "ctx ~161k/200k"),
                                ("ask", None, "ctx ~161k/200k")):
        n = numbers(events, mode, ContextSize(fixed=14_000, observations=23_400, raw=123_456),
                    window=ContextWindow(200_000, "table"), counted=counted)
        bar = toolbar_text(n, 80)
        assert len(bar) <= 80 and "…" not in bar, bar
        assert bar.rstrip().endswith("│ cache 96% · 96%"), bar
        assert said in bar and dollars(n.cost) in bar, bar


def test_a_dumb_terminal_is_as_wide_as_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl
    import pty
    import struct
    import termios

    from scribe.cli.repl.view import make_console

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 132, 0, 0))
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.delenv("COLUMNS", raising=False)
    with os.fdopen(follower, "w") as tty:
        monkeypatch.setattr(sys, "stdout", tty)
        console = make_console()
        assert console.is_dumb_terminal and not console.is_interactive  # no live area
        assert console.width == 132
    os.close(leader)


def test_completion_quotes_a_name_with_a_space(workspace: Path) -> None:
    (workspace / "my notes.md").write_text("")
    (workspace / "my dir").mkdir()
    (workspace / "my dir" / "inner file.txt").write_text("")
    assert completions(workspace, "read @my") == ['"my dir/', '"my notes.md"']
    assert completions(workspace, 'read @"my dir/in') == ['"my dir/inner file.txt"']
    assert completions(workspace, "@READ") == ["README.md"]  # no space: as it was
    assert completions(workspace, "/RE") == ["/resume", "/reflect"]  # commands in any case


def test_the_rest_of_an_answers_word_and_its_enter_are_swallowed() -> None:
    from prompt_toolkit.key_binding import KeyPress
    from prompt_toolkit.keys import Keys

    from scribe.cli.repl.keys import swallow

    def keys(text: str) -> list[KeyPress]:
        return [KeyPress(Keys.ControlM if c == "\r" else c) for c in text]

    def left(text: str, rest: str) -> tuple[str, str | None]:
        remaining, expected = swallow(keys(text), rest)
        return "".join("\r" if k.key == Keys.ControlM else str(k.key) for k in remaining), expected

    assert left("es\r", "es") == ("", None)
    assert left("ES\rnext", "es") == ("next", None)
    assert left("e", "es") == ("", "s")  # the rest may still come
    assert left("\rhello", "") == ("hello", None)  # "y" then Enter
    assert left("what", "es") == ("what", None)  # something else: kept
    assert left("lw", "lways") == ("", "ays")


def test_what_is_typed_during_a_turn_is_shown_as_a_line_editor_would_make_it() -> None:
    from prompt_toolkit.key_binding import KeyPress
    from prompt_toolkit.keys import Keys

    from scribe.cli.repl.keys import as_text

    typed = [KeyPress(c) for c in "add dox"] + [KeyPress(Keys.ControlH, "\x7f")] + [
        KeyPress(c) for c in "cs"] + [KeyPress(Keys.ControlM, "\r"), KeyPress(Keys.Left, "\x1b[D"),
                                      KeyPress(Keys.BracketedPaste, "two\nlines")]
    assert as_text(typed) == "add docs\ntwo\nlines"  # the arrow moved nothing here: it is ignored
    # under the live area, on one line, its end when it is long
    out = io.StringIO()
    view = View(Console(file=out, width=40, height=20, force_terminal=True, force_interactive=True, no_color=True))
    view.typed = lambda: "first line\n" + "x" * 60
    view.busy("thinking…")
    time.sleep(0.3)
    view.pause()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "next › …" in screen and "xxxxxxxxxx" in screen and "first line" not in screen


def test_a_wait_for_memory_is_a_spinner_that_says_what_for() -> None:
    from scribe.agent.protocol import CompressionWait

    out = io.StringIO()
    view = View(Console(file=out, width=200, height=20, force_terminal=True, force_interactive=True, no_color=True))
    view.handle(CompressionWait(4_117, 3_584))
    time.sleep(0.3)
    assert view._live is not None  # a spinner, which counts the seconds once they are worth saying
    view.pause()
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert ("waiting for the compression running since the last turn: this request is ~4,117 tokens, and the "
            "window leaves it 3,584  (Esc or Ctrl-C cancels)") in screen


def test_after_a_tool_result_the_wait_for_the_next_call_is_said(workspace: Path) -> None:
    """Between a tool's result and the next model call the agent may compress memory, a model
    call of its own: on a plain terminal a status line comes once that lasts."""
    out = io.StringIO()
    view = View(Console(file=out, width=100))
    call = ToolCall("t1", "read_file", {"path": "a"}, "a")
    result = ToolResultEvent(seq=3, ts="2026-01-01T00:00:00Z", tool_use_id="t1", tool="read_file", output="x",
                             is_error=False)
    view.handle(call)
    view.handle(ToolDone(call, result))
    assert wait_for(lambda: "thinking…" in out.getvalue(), STATUS_AFTER_S + 10)  # its timer fires in its thread
    view.pause()
    assert out.getvalue().endswith("thinking…  (Esc or Ctrl-C cancels)\n"), out.getvalue()
