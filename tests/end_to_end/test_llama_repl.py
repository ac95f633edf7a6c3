"""The daily loop on a real small window: the REPL in a real terminal emulator (tmux), typed at a
person's speed, against llama.cpp's `llama-server` with SmolLM2-135M-Instruct in one slot of
2,048 tokens. A paste of about 1,400 tokens, whose answer takes the next request past what the
window lets a request hold (a small model writes on to its `max_tokens`), then a question typed
while the compression that makes room runs (the bar says `compressing memory…`): the question is
answered, never refused for its size and left out. Whether it had to wait for the compression
depends on how long the model's answer ran; the screens say which (`pytest -s`).

The settings make the compression between turns certain rather than likely: nothing is kept raw
by the retention floor (a 128-token answer behind the paste would otherwise keep the paste raw),
and neither the payback rule nor an idle cache starts one at another moment.

"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from conftest import git
from helpers import SCRIBE, events_of, run_scribe, scribe_env, session_logs
from llama_server import LlamaServer, RecordingProxy
from pane import TmuxPane
from scribe.fakeapi import side_call_kind
from scribe.log.events import AssistantEvent, LeftOutEvent, ObservationEvent, UserEvent
from scribe.log.jsonl import read_log

pytestmark = [pytest.mark.slow, pytest.mark.first]  # one of the suite's longest files: started first

CONTEXT = 2048
WORDS = ("the server reads each request and the model writes an answer while the cache keeps the prefix of every "
         "prompt so that later calls evaluate only new tokens").split()
QUESTION = "what was the first line about?"
WAIT_S = 900  # a generous bound on one turn of a small model on a busy machine, not a timing assertion


def paste() -> str:
    """About 1,400 SmolLM2 tokens of text (its /tokenize counts 2,872 for 110 such lines): with
    the instructions, a request the window holds (1,792 tokens: 2,048 less 256 for the answer);
    with more than a short answer behind it, one it cannot. A window this small keeps the test
    short: the server evaluates about 80 prompt tokens a second and writes about 30."""
    rng = random.Random(7)
    lines = [f"{i}: " + " ".join(rng.choice(WORDS) for _ in range(22)) for i in range(53)]
    return "Here is a text. Summarise it in one sentence.\n" + "\n".join(lines)


def last_user_text(workspace: Path) -> str | None:
    """The last message the session's log holds (its lines as far as they are written)."""
    logs = session_logs(workspace)
    users = [e for e in read_log(logs[0]).events if isinstance(e, UserEvent)] if logs else []
    return users[-1].text if users else None


def bar(term: TmuxPane) -> str:
    lines = [line for line in term.screen().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def test_a_question_typed_while_a_small_window_compresses_is_answered(tmp_path: Path) -> None:
    workspace, home = tmp_path / "workspace", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    git(workspace, "init", "--quiet")
    screens: list[str] = []
    with (LlamaServer(CONTEXT, slots=1, log=tmp_path / "llama-server.log") as server,
          RecordingProxy(server.base_url) as proxy):
        env = scribe_env(proxy.base_url, home, TERM="xterm-256color", SCRIBE_MODEL="smollm2",
                         SCRIBE_WATCH_FILES="0", SCRIBE_REQUEST_TIMEOUT_S="600", SCRIBE_MAX_TOKENS="256",
                         SCRIBE_RETENTION="0", SCRIBE_OBSERVE_AHEAD="always", SCRIBE_OBSERVE_ON_PAYBACK="false",
                         SCRIBE_COMPRESS_WHEN_COLD="false")
        term = TmuxPane(tmp_path / "tmux.sock")
        term.start_program(SCRIBE, env, workspace, width=150, height=40)
        try:
            term.prompt_ready(WAIT_S)
            term.run("set-buffer", paste())
            term.run("paste-buffer", "-p", "-t", "0")  # bracketed, as a terminal pastes
            time.sleep(1)
            term.send("Enter")
            time.sleep(1)
            term.prompt_ready(WAIT_S)
            screens.append(term.screen())
            compressing = "compressing memory…" in bar(term)
            term.typing(QUESTION + "\n")  # at a person's speed, while the compression runs
            waits = []
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:  # what the turn says while it waits, as it goes
                shown = term.screen()
                if "waiting for the compression" in shown or "compressing memory first" in shown:
                    waits.append(shown)
                lines = [line.rstrip() for line in shown.splitlines() if line.strip()]
                # The prompt is back, empty, after the question was sent: its turn has ended. (The
                # screen alone cannot say it: a long answer scrolls the question off.)
                if len(lines) >= 2 and lines[-2] == "›" and last_user_text(workspace) == QUESTION:
                    break
                time.sleep(0.5)
            screens.append(term.screen())
            term.keys("/stats")
            time.sleep(2)
            term.prompt_ready(WAIT_S)
            screens.append(term.scrollback())
            term.keys("/exit")
            deadline = time.monotonic() + 120
            while term.exit_status() is None and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            term.stop()
    print("\n\n".join([*screens, *waits[-1:]]))
    assert compressing, screens[0]  # the question was typed while the bar said a compression ran
    assert term.exit_status() == 0, screens[-1]
    events = events_of(session_logs(workspace)[0])
    assert [e for e in events if isinstance(e, LeftOutEvent)] == []  # no turn dropped
    users = [e for e in events if isinstance(e, UserEvent)]
    assert [u.text for u in users][-1] == QUESTION
    assert any(isinstance(e, AssistantEvent) and e.seq > users[-1].seq for e in events)  # answered
    assert any(isinstance(e, ObservationEvent) for e in events)  # memory made the room
    # A request the server refuses for its size (an estimate of the newest message fell short)
    # is compressed and sent again: the very next request is answered.
    agent = [x for x in proxy.exchanges if side_call_kind(x.request) == "agent"]
    refused = [i for i, x in enumerate(agent) if x.status != 200]
    print(f"agent requests {len(agent)}, refused for their size {len(refused)}")
    assert all(i + 1 < len(agent) and agent[i + 1].status == 200 for i in refused), refused
    assert "memory could not make room" not in screens[-1]
    assert run_scribe(["log", "verify"], workspace, env).code == 0
