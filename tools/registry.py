"""The tool registry: the built-in tools in their fixed order, their definitions exactly as
sent to the Anthropic API, and `run_tool`, the one door the agent loop calls tools through.
It owns argument checking against each tool's input schema and turning every expected
failure into a one-line error result, so nothing but a programming error escapes."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scribe.tools.base import CommandInterrupted, Tool, ToolContext, ToolError, ToolOutput
from scribe.tools.command import RunCommand
from scribe.tools.files import EditFile, ReadFile, WriteFile
from scribe.tools.paths import display_path
from scribe.tools.recall import Recall
from scribe.tools.search import ListFiles, SearchFiles
from scribe.tools.textio import one_line
from scribe.tools.todo import Todo
from scribe.tools.web import WebFetch, WebLimits
from scribe.workspace.writers.atomic import WriteRefused

# JSON Schema type names -> Python types. bool is excluded from numbers explicitly below,
# because in Python True is an int.
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def builtin_tools(*, todo: bool = True, web: WebLimits | None = None) -> list[Tool]:
    """Fresh instances of the built-in tools, in the order the model sees them: the seven always,
    then the task list (`todo`: the `todo_tool` setting) and web_fetch under the limits `web`
    (when the `web_fetch` setting is on). Which a session has is decided as it starts
    (agent/builtins.py)."""
    tools: list[Tool] = [ReadFile(), WriteFile(), EditFile(), RunCommand(), ListFiles(), SearchFiles(), Recall()]
    if todo:
        tools.append(Todo())
    if web is not None:
        tools.append(WebFetch(web))
    return tools


def tool_definitions(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """The `tools` parameter of an API request. Deterministic (same tools, same bytes), which
    the prompt cache depends on; deep-copied so callers cannot mutate a tool's schema."""
    return [
        {"name": tool.name, "description": tool.description, "input_schema": copy.deepcopy(tool.input_schema)}
        for tool in tools
    ]


def run_tool(tools: Sequence[Tool], name: str, args: Any, ctx: ToolContext) -> ToolOutput:
    """Run one tool call. Unknown tools, bad arguments, refusals and OS failures come back as
    an error ToolOutput with one line of text; they never raise. Whatever a tool returns has
    scribe's secret values redacted (the log keeps it, the next request sends it)."""
    try:
        out = _run_tool(tools, name, args, ctx)
    except CommandInterrupted as stop:
        raise CommandInterrupted(_redacted(stop.output, ctx), stop.cause) from None
    return _redacted(out, ctx)


def _redacted(out: ToolOutput, ctx: ToolContext) -> ToolOutput:
    """The output with secret values replaced in its text and in every string of the non-text
    content it carries (an MCP server's unknown content types are kept in the log as sent)."""
    text = ctx.redact(out.text)
    attachments = [_redact_strings(a, ctx) for a in out.attachments]
    if text == out.text and attachments == out.attachments:
        return out
    return dataclasses.replace(out, text=text, attachments=attachments)


def _redact_strings(value: Any, ctx: ToolContext) -> Any:
    if isinstance(value, str):
        return ctx.redact(value)
    if isinstance(value, dict):
        return {k: _redact_strings(v, ctx) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_strings(v, ctx) for v in value]
    return value


def refused_before(tools: Sequence[Tool], name: str, args: Any, ctx: ToolContext) -> str | None:
    """What a call would be refused for, found without running it (a tool that can tell has a
    `refuses(args, ctx)`: web_fetch, of a URL it never fetches), redacted as its output would be;
    None when it may run, or only running it would tell."""
    tool = next((t for t in tools if t.name == name), None)
    refuses = getattr(tool, "refuses", None)
    if tool is None or not callable(refuses):
        return None
    problem, clean = check_args(tool, args)
    if problem is not None:
        return None  # running it says what is wrong with its arguments
    said = refuses(clean, ctx)
    return ctx.redact(said) if said is not None else None


def _run_tool(tools: Sequence[Tool], name: str, args: Any, ctx: ToolContext) -> ToolOutput:
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        available = ", ".join(t.name for t in tools)
        return _error(f"unknown tool '{name}'; available tools: {available}")
    problem, clean = check_args(tool, args)
    if problem is not None:
        return _error(f"{tool.name}: {problem}")
    try:
        return tool.run(clean, ctx)
    except (ToolError, WriteRefused) as exc:
        return _error(str(exc))
    except OSError as exc:
        return _error(_describe_os_error(tool, exc, ctx))
    except UnicodeError as exc:  # e.g. content holding lone surrogates cannot be UTF-8
        return _error(f"{tool.name}: text cannot be encoded as UTF-8 ({exc})")


def check_args(tool: Tool, args: Any) -> tuple[str | None, dict[str, Any]]:
    """Check `args` against the tool's schema (the subset our schemas use). Returns a problem
    line or None, and the arguments cleaned up: optional nulls dropped, 3.0 made 3."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, not {_json_type(args)}", {}
    schema = tool.input_schema
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    # Models sometimes send null for an optional argument; treat it as absent.
    clean = {key: value for key, value in args.items() if value is not None or key in required}
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(clean) - set(properties))
        if unknown:
            expected = ", ".join(properties) or "none"
            return f"unknown argument '{unknown[0]}' (expected: {expected})", {}
    missing = [key for key in required if key not in clean]
    if missing:
        return f"missing required argument '{missing[0]}'", {}
    for key, value in list(clean.items()):
        spec = properties.get(key, {})
        expected_type = spec.get("type")
        if expected_type in ("integer", "number") and isinstance(value, float) and value.is_integer():
            value = int(value) if expected_type == "integer" else value
            clean[key] = value
        if expected_type in _TYPES and (
            not isinstance(value, _TYPES[expected_type])
            or (isinstance(value, bool) and expected_type in ("integer", "number"))
        ):
            article = "an" if expected_type[0] in "aeiou" else "a"
            return f"argument '{key}' must be {article} {expected_type}, not {_json_type(value)}", {}
        minimum = spec.get("minimum")
        if minimum is not None and isinstance(value, (int, float)) and value < minimum:
            return f"argument '{key}' must be at least {minimum}, got {value}", {}
    return None, clean


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    for name in ("boolean", "string", "integer", "number", "object", "array"):
        if isinstance(value, _TYPES[name]):
            return name
    return type(value).__name__


def _describe_os_error(tool: Tool, exc: OSError, ctx: ToolContext) -> str:
    where = ""
    if exc.filename:
        path = Path(str(exc.filename))
        where = f": {display_path(ctx, path) if path.is_absolute() else path}"
    return f"{tool.name} failed: {exc.strerror or exc}{where}"


def _error(message: str) -> ToolOutput:
    return ToolOutput(text=one_line(message), is_error=True)
