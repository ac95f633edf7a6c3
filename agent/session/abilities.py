"""Whether the session's server lets the model use tools at all, checked rather than assumed.

llama.cpp drops a request's `tools` when the model's chat template has none (SmolLM2's has
none): the model then answers in text, and a request to write a file writes nothing. scribe
learns it two ways: the server's own report at a session start (`/props`:
`chat_template_caps.supports_tools`), or an answer that writes a tool call out as text instead
of making one. Either is recorded once per model as a `no_tools` event, so a continued session
knows without asking; the person is told in one line, and the session goes on as chat. The
requests do not change: the tools layer never does inside a session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from scribe.agent.session.session import Session
from scribe.context.render import current_model
from scribe.log.events import Block, NoToolsEvent
from scribe.model.window import ServerReport

# How a model writes a tool call as text when its server gave it no tools: the tags of common
# chat templates, or a JSON object naming one of the session's tools with its arguments.
_CALL_TAGS = re.compile(r"<tool_call>|<\|tool_call\|>|\[TOOL_CALLS\]|<function=")
_NAMED_CALL = re.compile(r'"name"\s*:\s*"(?P<name>[A-Za-z0-9_-]+)"\s*,\s*"(?:arguments|parameters|input)"\s*:')
QUOTE_CHARS = 80


def no_tools_line(event: NoToolsEvent) -> str:
    """The one line that tells the person."""
    why = ("its /props says the chat template has none" if event.source == "server"
           else "an answer wrote a tool call out as text")
    return (f"tools: the server gives {event.model} no tools ({why}); the session goes on as chat, "
            "and the model cannot read or change files or run commands")


def known(session: Session) -> NoToolsEvent | None:
    """The recorded news that the session's current model gets no tools, if any."""
    session.chunks.update(session.events)
    learned = session.chunks.no_tools
    if learned is None or learned.model != current_model(session.events, session.chunks):
        return None
    return learned


def at_start(session: Session, report: ServerReport | None) -> None:
    """A session starts: what the server reported is recorded when it is news, and the session's
    start notices say it once (from the log, for a continued session whose server says nothing)."""
    learned = known(session)
    if learned is None and report is not None and report.tools is False:
        learned = session.append(NoToolsEvent, model=current_model(session.events, session.chunks),
                                 source="server", detail="chat_template_caps.supports_tools is false")
    if learned is not None:
        session.notices.append(no_tools_line(learned))


def written_call(content: Sequence[Block], tool_names: Iterable[str]) -> str | None:
    """The start of a tool call an answer wrote out as text instead of making it, if it did."""
    if any(block.get("type") == "tool_use" for block in content):
        return None
    names = set(tool_names)
    for block in content:
        text = str(block.get("text", "")) if block.get("type") == "text" else ""
        found = _CALL_TAGS.search(text)
        named = next((m for m in _NAMED_CALL.finditer(text) if m["name"] in names), None)
        start = min((m.start() for m in (found, named) if m is not None), default=None)
        if start is not None:
            return " ".join(text[start:start + QUOTE_CHARS].split())
    return None


def from_answer(session: Session, content: Sequence[Block], tool_names: Iterable[str]) -> str | None:
    """After an agent call: an answer that wrote a tool call as text is recorded, the first time
    for the model; returns the line to tell the person then, else None."""
    if known(session) is not None:
        return None
    quoted = written_call(content, tool_names)
    if quoted is None:
        return None
    event = session.append(NoToolsEvent, model=current_model(session.events, session.chunks), source="answer",
                           detail=quoted)
    return no_tools_line(event)
