"""What the screen says while scribe waits and works, read back from a real terminal emulator
(tmux) with the `scribe` executable in it, against the fake API: work the bottom bar names
stops being named when it ends, with no key pressed; a running command's last lines show as it
runs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from helpers import SCRIBE, scribe_env, wait_for
from pane import TmuxPane
from scribe.fakeapi import (
    FakeMessagesServer,
    Reply,
    ScriptItem,
    SideCallModel,
    side_call_kind,
    tool_use_block,
)

COMPRESSING = "compressing memory…"


def message(k: int) -> str:
    """About 240 tokens: three of them pass an observe threshold of 800."""
    return f"message {k}: " + " ".join(f"word{k}-{i}" for i in range(100))


class SlowSideCalls:
    """Side calls that take `seconds` each, as a small local model's do; the agent answers at once."""

    def __init__(self, seconds: float) -> None:
        self.model, self.seconds = SideCallModel([Reply.text(f"Noted {k}.") for k in range(10)]), seconds

    def __call__(self, request: dict[str, Any]) -> ScriptItem:
        if side_call_kind(request) in ("observer", "reflector"):
            time.sleep(self.seconds)
        return self.model(request)


def bar(term: TmuxPane) -> str:
    lines = [line for line in term.screen().splitlines() if line.strip()]
    return lines[-1] if lines else ""


@pytest.mark.slow
def test_the_bar_stops_naming_a_compression_once_it_ends_without_a_key(workspace: Path, home: Path,
                                                                       tmp_path: Path) -> None:
    with FakeMessagesServer(SlowSideCalls(3.0)) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color", SCRIBE_OBSERVE_AHEAD="always",
                         SCRIBE_OBSERVE_TOKENS="800", SCRIBE_OBSERVE_ON_PAYBACK="false")
        term = TmuxPane(tmp_path / "tmux.sock")
        term.start_program(SCRIBE, env, workspace, width=160)
        try:
            named = False
            for k in range(5):
                term.prompt_ready()
                term.keys(message(k))
                time.sleep(0.5)
                term.prompt_ready()
                if COMPRESSING in bar(term):
                    named = True
                    break
            assert named, term.screen()  # a compression runs between turns, and the bar says so
            # nobody presses a key: the bar is drawn again when it ends
            assert wait_for(lambda: COMPRESSING not in bar(term), 30), term.screen()
            assert " │ ask │ " in bar(term), term.screen()
            term.keys("/exit")
            assert wait_for(lambda: term.exit_status() is not None, 30), term.screen()
        finally:
            term.stop()
    assert term.exit_status() == 0


COUNTING = "for i in 1 2 3 4 5 6 7 8; do echo counted-$i; sleep 0.6; done"


def counting(request: dict[str, Any]) -> ScriptItem:
    """One slow command that counts aloud, then done."""
    if any(b.get("type") == "tool_result" for b in request["messages"][-1]["content"]):
        return Reply.text("done counting")
    return Reply([tool_use_block("run_command", {"command": COUNTING})])


@pytest.mark.slow
def test_a_running_command_shows_its_last_lines_as_it_runs(workspace: Path, home: Path, tmp_path: Path) -> None:
    with FakeMessagesServer(counting) as server:
        env = scribe_env(server.base_url, home, TERM="xterm-256color")
        term = TmuxPane(tmp_path / "tmux.sock")
        term.start_program(f"{SCRIBE} -p full-auto", env, workspace)
        try:
            term.prompt_ready()
            term.keys("count")
            # while it runs (the spinner is up, no result yet), its latest line is on screen
            assert wait_for(lambda: "running…" in term.screen() and "│ counted-3" in term.screen(), 20), \
                term.screen()
            during = term.screen()
            term.wait("done counting")
            term.prompt_ready()
            term.keys("/exit")
            assert wait_for(lambda: term.exit_status() is not None, 30), term.screen()
        finally:
            term.stop()
    print(during)
    assert "counted-8" not in during  # shown as it came, not after it ended
    assert term.exit_status() == 0
