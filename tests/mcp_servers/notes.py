"""A real MCP server, written with the official SDK, for scribe's tests.

    python notes.py              serve over stdio
    python notes.py http PORT    serve streamable HTTP on 127.0.0.1:PORT (path /mcp)

NOTES_VARIANT=v2 changes what it offers (a tool gone, one added, a schema changed), as a server
upgraded between two runs would. NOTES_MODE makes it misbehave on purpose:
    fail        exit at start-up, saying why on stderr
    slow:S      wait S seconds before serving
    chatty      print lines that are not JSON-RPC on stdout, then exit
Its tools `crash`, `exit_soon`, `hang` and `garble` fail mid-session: exit during the call, exit
just after answering, never answer, or answer with a result that is not an MCP result. With
NOTES_FAULTS=1, more answer in ways no client should wait out: `malformed` (JSON that is not
JSON-RPC, for its id), `junk` (a line that is not JSON at all, and no answer), `huge` (an answer
of 50 MB), `deep` (an answer nested 200,000 brackets deep) and `endless` (40 MB with no line end,
then silence).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations
from tiny_png import png_bytes  # beside this file

VARIANT = os.environ.get("NOTES_VARIANT", "v1")
FAULTS = os.environ.get("NOTES_FAULTS") == "1"
MODE = os.environ.get("NOTES_MODE", "")
server = MCPServer("notes", log_level="WARNING")
# The SDK points fd 1 at stderr while it serves (stray prints must not corrupt the protocol), so
# `garble` keeps its own handle on the real stdout, taken before that.
WIRE = os.dup(1)
notes: dict[str, str] = {}


if VARIANT == "v1":
    @server.tool()
    def add_note(title: str, body: str) -> str:
        """Store a note under a title."""
        notes[title] = body
        return f"stored note '{title}' ({len(body)} characters)"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def find_notes(query: str) -> str:
        """Find the notes whose title or body contains the query."""
        found = [f"{t}: {b}" for t, b in notes.items() if query in t or query in b]
        return "\n".join(found) if found else f"no note matches '{query}'"
else:
    @server.tool()
    def tag_note(title: str, tag: str) -> str:
        """Tag a note."""
        return f"tagged '{title}' with {tag}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def find_notes(query: str, limit: int = 10) -> str:
        """Find notes (at most `limit`)."""
        return f"no note matches '{query}'"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def chart(title: str) -> list:
    """Draw a chart as a PNG image."""
    return [f"chart of {title}", Image(data=png_bytes(), format="png")]


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def big(lines: int) -> str:
    """Print many numbered lines."""
    return "\n".join(f"line {i} of the report" for i in range(1, lines + 1))


@server.tool()
def crash() -> str:
    """Exit in the middle of the call."""
    print("notes: crashed on purpose", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def exit_soon() -> str:
    """Answer, then exit a moment later (a server that dies while idle)."""
    threading.Timer(0.2, os._exit, args=(4,)).start()
    return "bye"


@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "unreachable"


@server.tool()
def garble(ctx: Context) -> str:
    """Answer the call with something that is not an MCP result."""
    request_id = int(ctx.request_id) if ctx.request_id.isdigit() else ctx.request_id
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list of blocks"}})
    os.write(WIRE, (line + "\n").encode())
    return "too late: the answer above came first"


def _request_id(ctx: Context) -> int | str:
    return int(ctx.request_id) if ctx.request_id.isdigit() else ctx.request_id


def _faulty(tool):  # type: ignore[no-untyped-def]
    return server.tool()(tool) if FAULTS else tool


@_faulty
def malformed(ctx: Context) -> str:
    """Answer the call with JSON that is not JSON-RPC (a result that is not an object)."""
    line = json.dumps({"jsonrpc": "2.0", "id": _request_id(ctx), "result": "not an object"})
    os.write(WIRE, (line + "\n").encode())
    return "too late: the answer above came first"


@_faulty
def junk() -> str:
    """Write a line that is not JSON-RPC where the answer should be, and never answer."""
    os.write(WIRE, b"oops: the server printed this instead\n")
    time.sleep(3600)
    return "unreachable"


@_faulty
def huge(ctx: Context) -> str:
    """Answer the call with 50 MB of text in one JSON-RPC line."""
    body = {"content": [{"type": "text", "text": "x" * 50_000_000}]}
    data = memoryview((json.dumps({"jsonrpc": "2.0", "id": _request_id(ctx), "result": body}) + "\n").encode())
    while data:
        data = data[os.write(WIRE, data):]
    return "too late: the answer above came first"


@_faulty
def deep(ctx: Context) -> str:
    """Answer the call with a result nested 200,000 brackets deep, in one line."""
    depth = 200_000
    head = json.dumps({"jsonrpc": "2.0", "id": _request_id(ctx), "result": {"content": []}})[:-2]
    _write(head.encode() + b', "deep": ' + b"[" * depth + b"]" * depth + b"}}\n")
    return "too late: the answer above came first"


@_faulty
def endless() -> str:
    """Write 40 MB on stdout with no line end, then nothing more, and never answer."""
    _write(b'{"jsonrpc": "2.0", "result": {"content": [{"type": "text", "text": "' + b"x" * 40_000_000)
    time.sleep(3600)
    return "unreachable"


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(WIRE, view):]


def main() -> None:
    if MODE == "fail":
        print("notes: cannot open the notes database at /nonexistent/notes.db", file=sys.stderr)
        sys.exit(2)
    if MODE.startswith("slow:"):
        time.sleep(float(MODE.split(":", 1)[1]))
    if MODE == "chatty":  # a program that is not an MCP server, like a mistyped command
        print("Welcome to notes 1.0!", flush=True)
        print("Type 'help' for a list of commands.", flush=True)
        time.sleep(0.5)
        sys.exit(1)
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()


if __name__ == "__main__":
    main()
