"""Which built-in tools a session has. The fixed seven always; web_fetch when the `web_fetch`
setting was on at the session's start. The session event records the definitions it sends
(`tools`), so a continued session has web_fetch exactly when it had it at its start, whatever the
setting says now: the tools layer of the cached prefix never changes inside a session. Its limits
(`web_fetch_max_bytes`, `web_fetch_timeout_s`, `web_fetch_domains`) are not part of the prompt,
and follow the settings of the run."""

from __future__ import annotations

from scribe.log.events import SessionEvent
from scribe.settings.values import Settings
from scribe.tools.base import Tool
from scribe.tools.registry import builtin_tools
from scribe.tools.web import WebFetch, WebLimits


def web_limits(settings: Settings) -> WebLimits:
    return WebLimits(max_bytes=settings.web_fetch_max_bytes, timeout_s=settings.web_fetch_timeout_s,
                     domains=settings.web_fetch_domains)


def new_session_tools(settings: Settings) -> list[Tool]:
    """The built-in tools a new session starts with."""
    return builtin_tools(web_limits(settings) if settings.web_fetch else None)


def session_builtins(header: SessionEvent, settings: Settings) -> list[Tool]:
    """The built-in tools of a session, as its session event recorded them."""
    recorded = {str(t.get("name")) for t in header.tools}
    return builtin_tools(web_limits(settings) if WebFetch.name in recorded else None)
