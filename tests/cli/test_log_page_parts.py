"""The session page's pure parts, without a browser: what it says the cache did for each call,
and the escaping it relies on (tests/cli/test_log_page.py opens whole pages in Chromium)."""

from __future__ import annotations

import json
from typing import Any

from builders import session_header
from scribe.cli.log.page.document import script_json, session_page
from scribe.cli.log.page.markdown import markdown_html
from scribe.cli.log.page.prompts import BlockStore, CallPrompt, PromptTrack
from scribe.context.render import prefix_blocks, render
from scribe.log.events import (
    AssistantEvent,
    Event,
    ModelSwitchEvent,
    ToolResultEvent,
    UsageEvent,
    UserEvent,
)
from scribe.tools.registry import builtin_tools, tool_definitions


class Log:
    """Events made by hand, with the clock under the test's control."""

    def __init__(self) -> None:
        self.events: list[Event] = [session_header(
            ts="2026-01-01T10:00:00Z", created="2026-01-01T10:00:00Z", model="claude-sonnet-5-5", scribe_version="t",
            tools=tool_definitions(builtin_tools()), prompt_hash="0", config={"model": "claude-sonnet-5-5"})]
        self.minute = 0.0

    def add(self, cls: type[Event], **fields: Any) -> Event:
        seconds = int(self.minute * 60)
        ts = f"2026-01-01T10:{seconds // 60:02d}:{seconds % 60:02d}Z"
        event = cls(seq=len(self.events), ts=ts, **fields)  # type: ignore[call-arg]
        self.events.append(event)
        return event

    def call(self, track: PromptTrack, *, read: int, write: int, text: str = "ok", model: str = "claude-sonnet-5-5",
             tool: bool = False) -> CallPrompt:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if tool:
            content.append({"type": "tool_use", "id": f"t{len(self.events)}", "name": "read_file", "input": {"path": "a"}})
        answer = self.add(AssistantEvent, content=content, stop_reason="tool_use" if tool else "end_turn",
                          message_id=f"m{len(self.events)}")
        usage = self.add(UsageEvent, purpose="agent", model=model, input=3, cache_read=read, cache_write=write,
                         output=5, message_id=f"m{answer.seq}")
        assert isinstance(usage, UsageEvent)
        return track.add(self.events, answer.seq, usage)


def test_what_the_page_says_the_cache_did_call_by_call() -> None:
    log, track = Log(), PromptTrack(BlockStore())
    log.add(UserEvent, text="read a")
    first = log.call(track, read=0, write=1500, tool=True)
    assert first.cached == 0 and first.differs_at is None and first.reason.startswith("The session's first call")
    assert [track.store.texts[b] for b in first.blocks] == prefix_blocks(render(log.events[:first.at]))

    log.minute = 1
    log.add(ToolResultEvent, tool_use_id=f"t{first.at}", tool="read_file", output="hello")
    grown = log.call(track, read=1500, write=40)
    # the previous prompt is a prefix: read up to the previous call's last breakpoint
    assert grown.differs_at is None and "nothing broke the cache" in grown.reason
    assert grown.cached == first.breakpoints[-1] + 1
    assert grown.blocks[:len(first.blocks)] == first.blocks

    log.minute = 2
    log.add(UserEvent, text="and b")
    billed_nothing = log.call(track, read=0, write=0)
    assert billed_nothing.cached == 0 and "Nothing was read from the cache" in billed_nothing.reason

    log.minute = 3
    log.add(ModelSwitchEvent, model="claude-opus-5")
    log.add(UserEvent, text="now with opus")
    switched = log.call(track, read=0, write=2000, model="claude-opus-5")
    assert switched.model == "claude-opus-5" and "The model changed from claude-sonnet-5-5 to claude-opus-5" in switched.reason
    assert switched.differs_at is None and switched.cached == 0

    log.minute = 20  # past the five minutes the cache keeps an entry
    log.add(UserEvent, text="after lunch")
    late = log.call(track, read=0, write=2100, model="claude-opus-5")
    assert "17 minutes since the previous call" in late.reason and "expired" in late.reason

    # a read the log cannot explain (an entry from before this session) is said so, not drawn
    odd = Log()
    odd.add(UserEvent, text="hi")
    alone = odd.call(PromptTrack(BlockStore()), read=1200, write=10)
    assert alone.cached == 0 and "does not show being written" in alone.reason


def test_a_changed_block_is_named_and_the_previous_one_kept() -> None:
    log, track = Log(), PromptTrack(BlockStore())
    log.add(UserEvent, text="one")
    before = log.call(track, read=0, write=1500)
    # the same log with its first user message different stands for a prompt changed early on
    other = Log()
    other.add(UserEvent, text="one, changed")
    changed = other.call(track, read=1400, write=100)
    position = changed.differs_at
    assert position is not None and position == len(before.blocks) - 1  # the user block, the prompt's last
    assert "What broke the cache: block" in changed.reason and "message 1 (user)" in changed.reason
    assert changed.was == before.blocks[position]
    assert json.loads(track.store.texts[changed.was].split(":", 1)[1])["text"] == "one"
    assert changed.cached <= position


def test_script_json_cannot_close_its_element() -> None:
    hostile = {"a": "</script><script>alert(1)</script><!--", "b": "\u2028&"}
    text = script_json(hostile)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == hostile


def test_markdown_escapes_html_and_refuses_script_links_and_images() -> None:
    out = markdown_html("<script>x()</script> [a](javascript:x()) [b](https://example.com) ![c](http://e/i.png)")
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert 'href="javascript:' not in out and "<img" not in out
    assert '<a href="https://example.com" rel="noopener noreferrer nofollow" target="_blank">b</a>' in out


def test_a_page_without_calls_still_opens() -> None:
    page = session_page("s", Log().events)
    assert "No model calls yet." in page and "No events yet." in page
