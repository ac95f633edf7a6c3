"""`scribe log html` and `scribe log serve`: the session page, opened in a real headless Chromium.

One browser for the module (Debian's chromium, driven by Playwright); sessions built through the
real agent, tools and SDK against the fake API, or written by hand where a case needs exact
content (a hostile log). Every page is made by the real `scribe` executable.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import stat
import subprocess
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from builders import header_fields
from conftest import make_repository
from helpers import SCRIBE, Ran, adopt, agent_for, run_scribe, scribe_env
from scribe.agent.lifecycle import switch_model
from scribe.agent.protocol import TurnEnded
from scribe.agent.session.start import start_session
from scribe.cli.log.common import money
from scribe.context.render import chunk_text
from scribe.fakeapi import FakeMessagesServer, Reply, text_block, tool_use_block
from scribe.log.chunks import active_chunks
from scribe.log.events import (
    AssistantEvent,
    Event,
    ObservationEvent,
    ReflectionEvent,
    SessionEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.log.jsonl import LogWriter, read_log
from scribe.memory.observer import OBSERVER_SYSTEM
from scribe.memory.reflector import REFLECTOR_SYSTEM
from scribe.settings.values import Settings
from scribe.tools.registry import builtin_tools, tool_definitions

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium's own connections are refused by this
# machine's closed network and it stalls; the sandbox needs privileges the test run lacks.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
NO_API = "http://127.0.0.1:9"  # log commands never call a model
WAIT_MS = 20_000  # the most a step may take on a loaded machine; what they do take is measured elsewhere

pytestmark = pytest.mark.slow


# --- sessions ---------------------------------------------------------------------------------

TURNS, LINES, OBSERVE = 7, 300, 2000  # enough for three observations and a reflection


def _lines(n: int, k: int) -> str:
    return f"for i in $(seq 1 {n}); do echo \"run{k} line $i: value=$((i * {k + 7}))\"; done"


class Model:
    """Agent calls from a script; observer and reflector calls answered from their input."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies

    def __call__(self, request: dict[str, Any]) -> Reply:
        system = request["system"][0]["text"]
        if system == OBSERVER_SYSTEM:
            return Reply.text("🔴 the user asked for numbered runs\n🟡 each run printed 300 lines\n"
                              "Current task: the runs\nNext step: keep going")
        if system == REFLECTOR_SYSTEM:
            return Reply.text("🔴 condensed: numbered runs, 300 lines each\nCurrent task: runs\nNext step: go on")
        return self.replies.pop(0) if self.replies else Reply.text("done")


@dataclass
class Built:
    workspace: Path
    home: Path
    log: Path

    @property
    def events(self) -> list[Event]:
        return read_log(self.log).events

    def scribe(self, *args: str) -> Ran:
        return run_scribe(list(args), self.workspace, scribe_env(NO_API, self.home), timeout=60)


@pytest.fixture(scope="module")
def compressed(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Seven turns of big command outputs with low thresholds: observations, a reflection, a failed
    command, and a model switch before the last turn, all through the real agent and fake API."""
    base = tmp_path_factory.mktemp("compressed")
    workspace = make_repository(base / "workspace")
    replies: list[Reply] = []
    for k in range(TURNS):
        replies.append(Reply([text_block(f"Run {k}."), tool_use_block("run_command", {"command": _lines(LINES, k)})]))
        replies.append(Reply([text_block(f"Run **{k}** printed 300 lines:\n\n- first `run{k} line 1`\n- then more")]))
    replies[-2:-2] = [Reply([tool_use_block("run_command", {"command": "echo oops >&2; exit 3"})])]
    settings = Settings(permission_mode="full-auto", observe_tokens=OBSERVE, reflect_tokens=60, preview_chars=3000)
    with pytest.MonkeyPatch.context() as mp, FakeMessagesServer(Model(replies)) as server:
        mp.setenv("ANTHROPIC_BASE_URL", server.base_url)
        mp.setenv("ANTHROPIC_API_KEY", "sk-test")
        mp.setenv("SCRIBE_HOME", str(workspace / ".scribe"))
        session = start_session(workspace, settings, tool_definitions(builtin_tools()))
        agent = agent_for(workspace, settings, session)
        for k in range(TURNS):
            if k == TURNS - 1:
                switch_model(session, "claude-opus-5")
            ended = [e for e in agent.turn(f"do run {k}") if isinstance(e, TurnEnded)]
            assert ended[-1].reason == "end_turn", ended
        session.close()
        assert all(r.error is None for r in server.requests)
    built = Built(workspace, base / "home", session.path)
    built.home.mkdir()
    events = built.events
    assert any(isinstance(e, ObservationEvent) for e in events) and any(isinstance(e, ReflectionEvent) for e in events)
    return built


HOSTILE = "<script>window.__pwned = 1</script>"
HOSTILE_ATTR = '"><img src=x onerror="window.__pwned = 2">'
HOSTILE_JSON = '</script><script>window.__pwned = 3</script><!--'
HOSTILE_MD = "[click me](javascript:window.__pwned=4) and <b onmouseover=\"window.__pwned=5\">bold</b>"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A log written by hand whose every text field tries to run script in the page."""
    base = tmp_path_factory.mktemp("hostile")
    workspace = make_repository(base / "workspace")
    log = workspace / ".scribe" / "sessions" / "hostile.jsonl"
    tools = tool_definitions(builtin_tools())
    with LogWriter.create(log) as w:
        w.append(SessionEvent, id="hostile", created="2026-01-01T00:00:00Z", cwd=HOSTILE_ATTR, model="claude-sonnet-5-5",
                 scribe_version=HOSTILE, system=f"You are scribe. {HOSTILE}", tools=tools, prompt_hash="0",
                 config={"model": "claude-sonnet-5-5"})
        w.append(UserEvent, text=f"please {HOSTILE} {HOSTILE_ATTR}")
        w.append(AssistantEvent, content=[{"type": "text", "text": f"Sure. {HOSTILE_MD} {HOSTILE}"},
                                          {"type": "tool_use", "id": "t1", "name": HOSTILE_ATTR,
                                           "input": {"path": HOSTILE_ATTR, "content": HOSTILE_JSON}}],
                 stop_reason="tool_use", message_id="m1")
        w.append(UsageEvent, purpose="agent", model=f"claude-sonnet-5-5{HOSTILE_ATTR}", input=10, cache_read=0,
                 cache_write=2000, output=5, message_id="m1")
        w.append(ToolResultEvent, tool_use_id="t1", tool=HOSTILE_ATTR, output=f"{HOSTILE_JSON}\n{HOSTILE}", is_error=True)
        w.append(AssistantEvent, content=[{"type": "text", "text": HOSTILE_JSON}], stop_reason="end_turn",
                 message_id="m2")
        # a second agent call: its prompt, embedded as JSON, holds the hostile call and output
        w.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=10, cache_read=1900,
                 cache_write=100, output=5, message_id="m2")
        w.append(UsageEvent, purpose=f"observer{HOSTILE_ATTR}", model="claude-haiku-5-5", input=10, cache_read=0,
                 cache_write=0, output=5)
        w.append(ObservationEvent, text=f"🔴 {HOSTILE} {HOSTILE_JSON}", seq_from=1, seq_to=4, tokens=12,
                 model=HOSTILE_ATTR)
    (log.parent / "hostile.lock").unlink(missing_ok=True)
    home = base / "home"
    home.mkdir()
    return Built(workspace, home, log)


# --- the browser ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="scribe-chromium-") as profile:
        context = p.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                       args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(WAIT_MS)
        yield context
        context.close()


@dataclass
class Opened:
    page: Any
    console: list[str]
    dialogs: list[str]


def open_page(browser: Any, url: str) -> Opened:
    page = browser.new_page()
    opened = Opened(page, [], [])
    page.on("console", lambda message: opened.console.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: opened.console.append(f"pageerror: {error}"))
    page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(url, wait_until="load")
    return opened


@pytest.fixture(scope="module")
def compressed_page(compressed: Built) -> str:
    """The compressed session's page, written once by `scribe log html`, as a file:// URL."""
    return write_page(compressed).as_uri()


def write_page(built: Built, name: str = "page.html") -> Path:
    target = built.workspace.parent / name
    ran = built.scribe("log", "html", str(built.log), "-o", str(target))
    assert ran.code == 0, ran.err
    assert f"wrote {target}" in ran.out
    return target


# --- the tests --------------------------------------------------------------------------------

def test_each_bar_matches_log_stats_call_by_call(browser: Any, compressed: Built, compressed_page: str) -> None:
    stats = compressed.scribe("log", "stats", "--json", str(compressed.log))
    assert stats.code == 0, stats.err
    per_call = stats.json()["per_call"]
    assert {c["purpose"] for c in per_call} == {"agent", "observer", "reflector"}

    opened = open_page(browser, compressed_page)
    page = opened.page
    # every segment drawn, read back as the browser has it: which call (from its x), how tall
    drawn = page.evaluate("""() => {
        const svg = document.querySelector('svg.calls');
        const left = Number(svg.dataset.left), step = Number(svg.dataset.step);
        const segments = [];
        for (const path of svg.querySelectorAll('path.tk, path.usd, path.strip')) {
          const d = path.getAttribute('d');
          for (const m of d.matchAll(/M([\\d.]+) ([\\d.]+)h([\\d.]+)v([\\d.]+)h-[\\d.]+z/g)) {
            segments.push({cls: path.getAttribute('class'), call: Math.round((Number(m[1]) - left) / step),
                           height: Number(m[4])});
          }
        }
        return {perPx: Number(svg.dataset.tokensPerPx), usdPerPx: Number(svg.dataset.dollarsPerPx), segments};
    }""")
    part = {"cr": "cache_read", "cw": "cache_write", "in": "input", "out": "output"}
    tokens: dict[tuple[int, str], float] = {}
    dollars: dict[int, float] = {}
    purposes: dict[int, str] = {}
    for segment in drawn["segments"]:
        kind, css, *rest = segment["cls"].split()
        i = segment["call"]
        if kind == "tk":
            assert (i, part[css]) not in tokens
            tokens[(i, part[css])] = segment["height"] * drawn["perPx"]
        elif kind == "usd":
            dollars[i] = dollars.get(i, 0.0) + segment["height"] * drawn["usdPerPx"]
        else:
            purposes[i] = css.removeprefix("p-")
    assert sorted(purposes) == list(range(len(per_call)))  # one bar per call, no more
    for i, call in enumerate(per_call):
        assert purposes[i] == call["purpose"], i
        side = [s for s in drawn["segments"] if s["call"] == i and s["cls"].startswith("tk ")]
        assert all(s["cls"].endswith(" agent" if call["purpose"] == "agent" else " side") for s in side)
        for name in part.values():
            # the drawn height is the figure on the chart's scale (heights are written to 0.01 px)
            assert abs(tokens.get((i, name), 0.0) - call[name]) <= 0.006 * drawn["perPx"], (i, name)
        assert abs(dollars[i] - call["cost_usd"]) <= 0.025 * drawn["usdPerPx"], i

    # choosing a bar (a click on it, then the arrow keys) shows that call's figures, as stats says
    chart = page.locator("svg.calls")
    step, left = float(chart.get_attribute("data-step")), float(chart.get_attribute("data-left"))
    for i in (0, len(per_call) - 1, len(per_call) // 2):
        chart.click(position={"x": left + i * step + 1, "y": 100})
        call = per_call[i]
        assert f"Call {i + 1} of {len(per_call)} · {call['purpose']} · {call['model']} · seq {call['seq']}" in \
            page.inner_text("#call-title")
        figures = page.inner_text("table.call-figures")
        for name, value in (("cache read", call["cache_read"]), ("cache write", call["cache_write"]),
                            ("uncached input", call["input"]), ("output", call["output"])):
            assert f"{name}\t{value:,}" in figures, (name, figures)
        assert f"cost\t{money(call['cost_usd'])}" in figures
    page.keyboard.press("ArrowRight")
    assert f"seq {per_call[len(per_call) // 2 + 1]['seq']}" in page.inner_text("#call-title")
    assert chart.get_attribute("aria-valuenow") == str(len(per_call) // 2 + 2)
    assert page.evaluate("() => document.activeElement.id") == "calls-chart"
    assert not opened.console, opened.console
    page.close()


def test_a_cache_break_points_at_the_block_that_changed(browser: Any, compressed: Built, compressed_page: str) -> None:
    events = compressed.events
    tools = len(events[0].tools)  # type: ignore[attr-defined]
    opened = open_page(browser, compressed_page)
    page = opened.page

    # the first agent call after each new chunk: its prompt differs from the call before at the
    # chunk's place among the system blocks (tools, then instructions, then the chunks in order)
    agent_calls = [(i, e) for i, e in enumerate(events) if isinstance(e, UsageEvent) and e.purpose == "agent"]
    checked = 0
    for (before_index, _), (index, usage) in zip(agent_calls, agent_calls[1:], strict=False):
        made = [e for e in events[before_index:index] if isinstance(e, ObservationEvent | ReflectionEvent)]
        if not made:
            continue
        chunks, _ = active_chunks(events[:index])
        before, _ = active_chunks(events[:before_index])
        position = next(k for k, (a, b) in enumerate(zip([*before, None], chunks, strict=False)) if a is not b)
        expected_block = tools + 1 + position + 1  # 1-based, after the instructions block
        page.goto(compressed_page + f"#call-{usage.seq}", wait_until="load")
        assert f"seq {usage.seq}" in page.inner_text("#call-title")
        reason = page.inner_text("#call p.reason")
        assert f"What broke the cache: block {expected_block} (system block" in reason, reason
        differs = page.locator("ol.blocks > li.differs")
        assert differs.count() == 1
        assert differs.get_attribute("id") == f"block-{expected_block}"
        differs.locator("summary").click()
        assert chunk_text(chunks[position]) in differs.locator("pre").first.inner_text()
        # what the cache served ends before the block that changed
        cached = page.locator("ol.blocks > li.cached")
        assert cached.count() < expected_block
        checked += 1
    assert checked >= 2  # an observation and a reflection, at least

    # a call whose prompt only grew names no break; the model switch is named as the cause
    plain = next(u for (_, u), (_, prev) in zip(agent_calls[1:], agent_calls, strict=False)
                 if u.model == prev.model and u.cache_read > 0 and u.seq - prev.seq <= 4)
    page.goto(compressed_page + f"#call-{plain.seq}", wait_until="load")
    assert page.locator("ol.blocks > li.differs").count() == 0
    assert "nothing broke the cache" in page.inner_text("#call p.reason")
    switched = next(u for _, u in agent_calls if u.model == "claude-opus-5")
    page.goto(compressed_page + f"#call-{switched.seq}", wait_until="load")
    assert "The model changed from claude-sonnet-5-5 to claude-opus-5" in page.inner_text("#call p.reason")
    assert not opened.console, opened.console
    page.close()


def test_outputs_and_turns_fold_with_mouse_and_keyboard(browser: Any, compressed_page: str) -> None:
    opened = open_page(browser, compressed_page)
    page = opened.page
    result = page.locator("details.result").first
    output = result.locator("pre.out")
    assert result.evaluate("d => d.open") is False and not output.is_visible()
    result.locator("summary").click()
    assert result.evaluate("d => d.open") is True and output.is_visible()
    assert "run0 line 1: value=7" in output.inner_text()
    result.locator("summary").focus()
    page.keyboard.press("Enter")
    assert result.evaluate("d => d.open") is False and not output.is_visible()

    turn = page.locator("details.turn").first
    assert turn.locator(".ev.user").is_visible()
    page.get_by_role("button", name="fold all turns", exact=True).click()
    assert not turn.locator(".ev.user").is_visible()
    page.get_by_role("button", name="fold all turns", exact=True).focus()
    page.keyboard.press("Tab")  # to "unfold all turns"
    page.keyboard.press("Enter")
    assert turn.locator(".ev.user").is_visible()
    page.get_by_role("button", name="open all outputs", exact=True).click()
    assert all(d for d in page.locator("details.result").evaluate_all("ds => ds.map(d => d.open)"))
    assert not opened.console, opened.console
    page.close()


def test_a_hostile_log_stays_text_and_runs_nothing(browser: Any, hostile: Built) -> None:
    target = write_page(hostile)
    opened = open_page(browser, target.as_uri())
    page = opened.page
    page.set_viewport_size({"width": 1280, "height": 6000})  # all of it on screen, so all of it laid out
    page.locator("details.result summary").first.click()
    page.locator("ol.blocks > li summary").last.click()  # the user's message in the prompt, opened
    assert page.evaluate("() => window.__pwned") is None
    assert opened.dialogs == [] and opened.console == [], (opened.dialogs, opened.console)
    # nothing the log holds became markup: two scripts (the data and the page's own), no event
    # handler attributes, no script links, no images
    assert page.evaluate("() => document.scripts.length") == 2
    handlers = page.evaluate("() => [...document.querySelectorAll('*')].flatMap(e => [...e.attributes]"
                             ".filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name))")
    assert handlers == []
    assert page.evaluate("() => [...document.links].filter(a => /^\\s*javascript:/i.test(a.getAttribute('href'))).length") == 0
    assert page.locator("img").count() == 0
    text = page.inner_text("body")
    for hostile_text in (HOSTILE, HOSTILE_ATTR, "[click me](javascript:window.__pwned=4)", "</script><script>"):
        assert hostile_text in text, hostile_text
    assert page.inner_text(".ev.user .plain") == f"please {HOSTILE} {HOSTILE_ATTR}"
    assert HOSTILE in page.inner_text(".ev.assistant .md") and HOSTILE_MD.split(" and ")[0] in page.inner_text(".ev.assistant .md")
    assert HOSTILE_JSON in page.inner_text("details.result pre.out") and HOSTILE in page.inner_text(".ev.memory pre")
    assert HOSTILE in page.inner_text("ol.blocks")  # the prompt, rebuilt from the embedded JSON
    page.locator("svg.calls").focus()
    page.keyboard.press("ArrowRight")  # the second call, whose prompt holds the hostile output
    page.locator("ol.blocks > li summary").last.click()
    assert HOSTILE_JSON in page.inner_text("ol.blocks > li:last-child pre")
    assert page.evaluate("() => window.__pwned") is None and opened.console == [], opened.console
    page.close()


HEBREW = "בדוק את החשבונית"  # "check the invoice"
RLO_NAME = "invoice\u202etxt.exe"  # reads `invoiceexe.txt` where the override is obeyed
ISOLATE_AND_ZWSP = "\u2067abc\u2069 pay\u200bpal"


@pytest.fixture(scope="module")
def bidi(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A log written by hand with a right-to-left prompt, a file name with a right-to-left
    override and text with an isolate and a zero-width space."""
    base = tmp_path_factory.mktemp("bidi")
    workspace = make_repository(base / "workspace")
    log = workspace / ".scribe" / "sessions" / "bidi.jsonl"
    tools = tool_definitions(builtin_tools())
    with LogWriter.create(log) as w:
        w.append(SessionEvent, **header_fields(id="bidi", created="2026-01-01T00:00:00Z", cwd=str(workspace),
                                               model="claude-sonnet-5-5", tools=tools, prompt_hash="0",
                                               config={"model": "claude-sonnet-5-5"}))
        w.append(UserEvent, text=HEBREW)
        w.append(AssistantEvent, content=[{"type": "text", "text": f"Reading {RLO_NAME} and {ISOLATE_AND_ZWSP}."},
                                          {"type": "tool_use", "id": "t1", "name": "run_command",
                                           "input": {"command": f"cat {RLO_NAME}"}}],
                 stop_reason="tool_use", message_id="m1")
        w.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=10, cache_read=0, cache_write=2000,
                 output=5, message_id="m1")
        w.append(ToolResultEvent, tool_use_id="t1", tool="run_command", output=f"{RLO_NAME}\n{ISOLATE_AND_ZWSP}\n",
                 is_error=False, exit_code=0, duration_ms=12)
        w.append(AssistantEvent, content=[{"type": "text", "text": f"It is {RLO_NAME}."}], stop_reason="end_turn",
                 message_id="m2")
        w.append(UsageEvent, purpose="agent", model="claude-sonnet-5-5", input=10, cache_read=1900, cache_write=100,
                 output=5, message_id="m2")
    (log.parent / "bidi.lock").unlink(missing_ok=True)
    home = base / "home"
    home.mkdir()
    return Built(workspace, home, log)


# The left edge of the first character of `text` inside the element `selector` matches, on screen.
CHAR_LEFT = """([selector, text, nth]) => {
    const walker = document.createTreeWalker(document.querySelector(selector), NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.data.indexOf(text);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(node, at + nth); range.setEnd(node, at + nth + 1);
      return range.getBoundingClientRect().left;
    }
    return null;
}"""


def test_bidi_controls_are_marked_and_every_log_text_isolated(browser: Any, bidi: Built) -> None:
    target = write_page(bidi)
    opened = open_page(browser, target.as_uri())
    page = opened.page
    page.set_viewport_size({"width": 1280, "height": 4000})
    page.locator("details.result summary").first.click()
    body = page.inner_text("body")
    for raw in ("\u202e", "\u2067", "\u2069", "\u200b"):
        assert raw not in body, repr(raw)
    assert "invoice<U+202E>txt.exe" in page.inner_text(".call-head")  # the command of the call
    assert "invoice<U+202E>txt.exe" in page.inner_text("details.result pre.out")  # its output
    assert "<U+2067>abc<U+2069> pay<U+200B>pal" in page.inner_text(".ev.assistant .md")  # the answer
    assert page.get_attribute("details.result pre.out .ch", "title") == "U+202E RIGHT-TO-LEFT OVERRIDE"
    # what follows the name in its row reads left to right: `ms` is not reversed into `sm`
    summary = "details.result summary"
    assert page.evaluate(CHAR_LEFT, [summary, "ms", 0]) < page.evaluate(CHAR_LEFT, [summary, "ms", 1])
    # the Hebrew prompt keeps the turn's time on its left and its call count on its right
    turn = "details.turn > summary"
    gist = page.locator(f"{turn} .gist").bounding_box()
    assert page.evaluate(CHAR_LEFT, [f"{turn} .turn-cost", "2 calls", 0]) >= gist["x"] + gist["width"] - 1
    assert page.locator(f"{turn} time").bounding_box()["x"] < gist["x"]
    assert page.evaluate("() => getComputedStyle(document.querySelector('.gist bdi')).unicodeBidi") == "isolate"
    # the prompt the page's script rebuilds marks them too
    page.locator("svg.calls").focus()
    page.keyboard.press("ArrowRight")  # the second call, whose prompt holds the call and its output
    page.locator("ol.blocks > li summary").last.click()
    blocks = page.inner_text("ol.blocks")
    assert "invoice<U+202E>txt.exe" in blocks and "\u202e" not in blocks
    assert opened.console == [], opened.console
    page.close()
    assert RLO_NAME in bidi.log.read_text(encoding="utf-8")  # the log keeps the characters


# --- the server -------------------------------------------------------------------------------

@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    port: int


def serve(built: Built, *args: str) -> Served:
    env = scribe_env(NO_API, built.home)
    proc = subprocess.Popen([SCRIBE, "log", "serve", str(built.log), *args], cwd=built.workspace, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " at http://127.0.0.1:" in line, line
    url = line.split(" at ", 1)[1].split()[0]
    port = urllib.parse.urlsplit(url).port
    assert port is not None, url
    return Served(proc, url, port)


def stop(served: Served) -> tuple[int, str]:
    served.proc.send_signal(signal.SIGINT)
    out, err = served.proc.communicate(timeout=30)
    return served.proc.returncode, out + err


def test_serve_shows_an_appended_event_and_stops_on_ctrl_c(browser: Any, compressed: Built, tmp_path: Path) -> None:
    log = tmp_path / "live.jsonl"  # a copy: the other tests read the session as it was built
    log.write_bytes(compressed.log.read_bytes())
    adopt(log)  # a copy: its seal stayed with the original
    live = Built(compressed.workspace, compressed.home, log)
    served = serve(live)
    try:
        opened = open_page(browser, served.url)
        page = opened.page
        assert page.locator("#live").is_visible()
        before = int(page.locator("svg.calls").get_attribute("aria-valuemax"))
        marker = "a message appended while the page was open"
        with LogWriter.resume(log, read_log(log)) as writer:
            writer.append(UserEvent, text=marker)
            writer.append(UsageEvent, purpose="curator", model="claude-haiku-5-5", input=40, cache_read=0,
                          cache_write=0, output=9)
        # (turns far from the screen are not laid out, so innerText would not see it: ask for the element)
        page.locator(".ev.user .plain", has_text=marker).wait_for(state="visible")
        page.wait_for_function(f"() => document.querySelector('svg.calls').getAttribute('aria-valuemax') === '{before + 1}'")
        assert page.locator("#live").is_visible() and not opened.console, opened.console
        # what the page took in piece by piece is what a page opened now shows whole
        fresh = open_page(browser, served.url)
        for part in ("#turns", "#figures-body", "#memory-body", "#head"):
            assert page.text_content(part) == fresh.page.text_content(part), part
        assert page.get_attribute("svg.calls", "aria-valuemax") == fresh.page.get_attribute("svg.calls", "aria-valuemax")
        for path in ("path.tk.cr.agent", "path.strip.p-curator"):
            assert page.get_attribute(f"svg.calls {path}", "d") == fresh.page.get_attribute(f"svg.calls {path}", "d")
        page.locator("svg.calls").focus()
        page.keyboard.press("End")  # the last call: the one just appended
        assert "curator" in page.inner_text("#call-title")
        fresh.page.close()

        # loopback only, and only under its own names
        listening = socket.create_connection(("127.0.0.1", served.port))
        assert listening.getsockname()[0] == "127.0.0.1"
        listening.close()
        connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
        connection.request("GET", urllib.parse.urlsplit(served.url).path + "update",
                           headers={"Host": f"evil.example:{served.port}"})
        assert connection.getresponse().status == 403
        connection.close()
        page.close()
    finally:
        code, output = stop(served)
    assert code == 0, output
    assert "scribe log serve: stopped" in output and "Traceback" not in output


def test_serve_on_a_busy_port_is_one_line(compressed: Built) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        ran = compressed.scribe("log", "serve", str(compressed.log), "--port", str(taken.getsockname()[1]))
    finally:
        taken.close()
    assert ran.code == 2
    assert ran.err.strip().count("\n") == 0 and "is in use" in ran.err, ran.err


# --- the command, without a browser -------------------------------------------------------------

def test_html_writes_one_self_contained_file(compressed: Built) -> None:
    ran = compressed.scribe("log", "html")
    assert ran.code == 0, ran.err
    session_id = compressed.log.stem
    written = compressed.workspace / f"{session_id}.html"
    page = written.read_text()
    umask = os.umask(0)
    os.umask(umask)
    assert umask != 0o077 and stat.S_IMODE(written.stat().st_mode) == 0o600  # private, as the log
    written.unlink()
    assert ran.out.startswith(f"wrote {session_id}.html (") and "file://" in ran.out
    # nothing to fetch: no external script, style sheet, image or font
    for reference in ("<script src", "<link", "<img", "@import", "url(", "http://", "https://"):
        assert reference not in page.split('id="scribe-data"')[0], reference
    piped = compressed.scribe("log", "html", "-o", "-")
    assert piped.code == 0 and piped.out == page
    data = json.loads(piped.out.split('id="scribe-data">', 1)[1].split("</script>", 1)[0])
    assert len(set(data["blocks"])) == len(data["blocks"])  # each block stored once


def test_html_errors_are_one_line(compressed: Built, tmp_path: Path) -> None:
    missing = compressed.scribe("log", "html", "no-such-session")
    assert missing.code == 2 and missing.err.count("\n") == 1 and missing.err.startswith("scribe: ")
    unwritable = compressed.scribe("log", "html", "-o", str(tmp_path / "no" / "such" / "folder" / "p.html"))
    assert unwritable.code == 2 and unwritable.err.count("\n") == 1, unwritable.err
    assert "could not write" in unwritable.err and "nothing was written" in unwritable.err
    assert "Traceback" not in unwritable.err
    helped = compressed.scribe("log", "html", "--help")
    assert helped.code == 0
    assert "offline" in helped.out and "--output" in helped.out
    served = compressed.scribe("log", "serve", "--help")
    assert served.code == 0 and "127.0.0.1" in served.out and "--port" in served.out
