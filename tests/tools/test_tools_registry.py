"""The registry: fixed tool order, API definitions that are deterministic and well formed,
and run_tool turning every expected failure into one error line."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from scribe.tools.base import ToolContext
from scribe.tools.command import RunCommand
from scribe.tools.registry import builtin_tools, check_args, run_tool, tool_definitions


@pytest.fixture
def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace=workspace)


def test_builtin_tools_order_and_kinds() -> None:
    tools = builtin_tools()
    assert [(t.name, t.kind) for t in tools] == [
        ("read_file", "read"),
        ("write_file", "edit"),
        ("edit_file", "edit"),
        ("run_command", "command"),
        ("list_files", "read"),
        ("search_files", "read"),
        ("recall", "read"),
        ("todo", "read"),
    ]
    assert isinstance(tools[3], RunCommand)  # the REPL finds it here to cancel()


def test_definitions_are_deterministic_valid_and_lean() -> None:
    first = json.dumps(tool_definitions(builtin_tools()))
    assert json.dumps(tool_definitions(builtin_tools())) == first
    for definition in tool_definitions(builtin_tools()):
        assert list(definition) == ["name", "description", "input_schema"]
        schema = definition["input_schema"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert len(definition["description"]) < 450, definition["name"]
    assert len(first) < 5000


def test_definitions_are_copies(ctx: ToolContext) -> None:
    tools = builtin_tools()
    tool_definitions(tools)[0]["input_schema"]["properties"].clear()
    assert "path" in tool_definitions(tools)[0]["input_schema"]["properties"]


def test_summaries_name_the_main_argument() -> None:
    tools = {t.name: t for t in builtin_tools()}
    assert tools["read_file"].summary({"path": "a.py"}) == "a.py"
    assert tools["read_file"].summary({"path": "a.py", "offset": 10, "limit": 5}) == "a.py (lines 10-14)"
    assert tools["edit_file"].summary({"path": "a.py", "old_text": "x", "new_text": "y"}) == "a.py"
    assert tools["run_command"].summary({"command": "make test\nmake lint"}) == "make test …"
    assert tools["list_files"].summary({}) == "."
    assert tools["search_files"].summary({"pattern": "TODO", "path": "src"}) == "/TODO/ in src"
    assert tools["write_file"].summary({}) == ""  # bad args must not crash a summary


def test_unknown_tool_and_bad_arguments_are_one_line_errors(ctx: ToolContext) -> None:
    tools = builtin_tools()
    cases = {
        (
            "delete_file",
            '{"path": "x"}',
        ): "unknown tool 'delete_file'; available tools: read_file, write_file, "
        "edit_file, run_command, list_files, search_files, recall, todo",
        ("read_file", "{}"): "read_file: missing required argument 'path'",
        (
            "read_file",
            '{"path": "a", "lines": 3}',
        ): "read_file: unknown argument 'lines' (expected: path, offset, limit)",
        ("read_file", '{"path": 3}'): "read_file: argument 'path' must be a string, not integer",
        (
            "read_file",
            '{"path": "a", "offset": true}',
        ): "read_file: argument 'offset' must be an integer, not boolean",
        ("read_file", '{"path": "a", "offset": 0}'): "read_file: argument 'offset' must be at least 1, got 0",
        ("read_file", '["a"]'): "read_file: arguments must be a JSON object, not array",
    }
    for (name, raw), expected in cases.items():
        out = run_tool(tools, name, json.loads(raw), ctx)
        assert out.is_error and out.text == expected


def test_lenient_where_it_is_harmless(ctx: ToolContext) -> None:
    tool = builtin_tools()[0]
    assert check_args(tool, {"path": "README.md", "offset": 2.0, "limit": None}) == (
        None,
        {"path": "README.md", "offset": 2},
    )
    out = run_tool(builtin_tools(), "read_file", {"path": "README.md", "limit": 1.0, "offset": None}, ctx)
    assert out.text == "     1\t# test workspace"


def test_os_errors_become_error_results(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "plain.txt").write_text("x")
    out = run_tool(builtin_tools(), "write_file", {"path": "plain.txt/inner.txt", "content": "y"}, ctx)
    assert out.is_error
    assert out.text == "cannot create plain.txt/inner.txt: plain.txt is a file, not a directory"
    too_long = run_tool(builtin_tools(), "write_file", {"path": "n" * 300 + ".txt", "content": "y"}, ctx)
    assert too_long.is_error
    assert too_long.text == f"write_file failed: File name too long: {'n' * 300}.txt"


def test_unencodable_content_is_an_error_not_a_crash(ctx: ToolContext) -> None:
    out = run_tool(builtin_tools(), "write_file", {"path": "s.txt", "content": "bad \ud800 surrogate"}, ctx)
    assert out.is_error and out.text.startswith("write_file: text cannot be encoded as UTF-8")
