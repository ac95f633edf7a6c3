"""Which built-in tools a session has. The fixed seven always; the task list when `todo_tool`,
web_fetch when `web_fetch` and the task tool (sub-agents) when `task_tool` were on at the
session's start (a sub-agent never has the task tool). The session event records the
definitions it sends (`tools`), so a continued session has exactly the tools it began with,
whatever the settings say now, and one started by an older scribe lacks a tool added since: the
tools layer of the cached prefix never changes inside a session. web_fetch's limits
(`web_fetch_max_bytes`, `web_fetch_timeout_s`, `web_fetch_domains`) are not part of the prompt,
and follow the settings of the run."""

from __future__ import annotations

from collections.abc import Sequence

from scribe.log.events import SessionEvent
from scribe.settings.agents import AgentSpec
from scribe.settings.values import Settings
from scribe.tools.base import Tool
from scribe.tools.registry import builtin_tools
from scribe.tools.task import Task
from scribe.tools.web import WebLimits

TASK = "task"


def web_limits(settings: Settings) -> WebLimits:
    return WebLimits(max_bytes=settings.web_fetch_max_bytes, timeout_s=settings.web_fetch_timeout_s,
                     domains=settings.web_fetch_domains)


def new_session_tools(settings: Settings, agents: Sequence[AgentSpec] = ()) -> list[Tool]:
    """The built-in tools a new session starts with; `agents`: the sub-agents its task tool may
    start (none: no task tool)."""
    tools = builtin_tools(todo=settings.todo_tool, web=web_limits(settings) if settings.web_fetch else None)
    if settings.task_tool and agents:
        tools.append(Task([(agent.name, agent.description) for agent in agents]))
    return tools


def session_builtins(header: SessionEvent, settings: Settings) -> list[Tool]:
    """The built-in tools of a session, as its session event recorded them, in that order."""
    names = [str(d.get("name")) for d in header.tools]
    every = {t.name: t for t in builtin_tools(todo="todo" in names,
                                              web=web_limits(settings) if "web_fetch" in names else None)}
    if TASK in names:
        every[TASK] = Task([(str(a["name"]), str(a.get("description", ""))) for a in header.agents])
    return [every[name] for name in names if name in every]
