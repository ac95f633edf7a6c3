"""scribe: a coding agent whose memory is what it has seen and done.

The Python API (docs/api.md) is here, loaded on first use so that `scribe --help` and the
command line load none of it:

    import scribe
    with scribe.open_session(".", permission_mode="accept-edits") as session:
        for event in session.send("What does this repository do?"):
            ...
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# Each name of the API and the module that defines it.
_API = {
    "open_session": "scribe.api.session", "open_async_session": "scribe.api.session",
    "Session": "scribe.api.session", "AsyncSession": "scribe.api.session",
    "Decision": "scribe.agent.protocol", "ApprovalRequested": "scribe.agent.protocol",
    "TextDelta": "scribe.agent.protocol", "ToolCall": "scribe.agent.protocol", "ToolDone": "scribe.agent.protocol",
    "AssistantMessage": "scribe.agent.protocol", "TurnEnded": "scribe.agent.protocol",
    "Notice": "scribe.agent.protocol", "Compressed": "scribe.agent.protocol",
    "SessionOpened": "scribe.agent.protocol", "UserMessage": "scribe.agent.protocol",
    "SubagentEvent": "scribe.agent.protocol",
    "Compact": "scribe.agent.protocol", "SwitchModel": "scribe.agent.protocol", "SetMode": "scribe.agent.protocol",
    "PermissionMode": "scribe.settings.values",
}
__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'scribe' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
