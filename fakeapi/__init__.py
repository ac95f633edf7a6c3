"""A fake Anthropic Messages API served over loopback HTTP for the real `anthropic` SDK.

Tests, benchmarks and `scribe demo` point `anthropic.Anthropic(base_url=...)` at a
`FakeMessagesServer` and script what the "model" answers: `Reply` items (built from
`text_block` / `tool_use_block`) or `Fault` items (HTTP errors, dropped connections,
streams cut, stalled, ended early or garbled, 200 answers that are not a stream, servers that
hang; each kind is described on `Fault`). The server validates requests like the real API and bills
them against a prompt cache that follows Anthropic's documented caching rules.
`SideCallModel` answers scribe's observer, reflector and curator calls in a chosen habit from
the catalogue in habits.py (the shapes real models write), the agent's calls from a script.
"""

from __future__ import annotations

from .cache import CacheUsage, PromptCache
from .habits import HABITS, Entry, Habit, Said, habit
from .script import (
    EXHAUSTED_TEXT,
    FAULT_KINDS,
    MALFORMED_SSE,
    STREAM_CONTENT_TYPE,
    Fault,
    Reply,
    Responder,
    ScriptItem,
    text_block,
    tool_use_block,
)
from .server import FakeMessagesServer, RecordedRequest
from .sidecalls import SideCallModel
from .stretch import side_call_body, side_call_kind
from .tokens import count_tokens

__all__ = [
    "EXHAUSTED_TEXT",
    "FAULT_KINDS",
    "MALFORMED_SSE",
    "STREAM_CONTENT_TYPE",
    "HABITS",
    "CacheUsage",
    "Entry",
    "FakeMessagesServer",
    "Fault",
    "Habit",
    "PromptCache",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Said",
    "ScriptItem",
    "SideCallModel",
    "count_tokens",
    "habit",
    "side_call_body",
    "side_call_kind",
    "text_block",
    "tool_use_block",
]
