"""The MCP servers of one scribe process, on a background event loop.

The SDK is asyncio; scribe's agent loop is synchronous. The hub owns one thread running one
event loop, every server's connection lives there, and the agent calls in with deadlines:

    hub.start()                 every server starts in parallel, in the background
    hub.wait(limit)             at a session start: the servers settled by then
    hub.call(server, tool, ..)  blocks the caller until a result, an error or the deadline
    hub.close()                 stops every server (their process trees too) and the loop

The SDK itself (about half a second to import) is imported on the loop thread, so a process with
MCP servers configured does not wait for it before showing its prompt.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scribe.tools.base import stop_if_cancelled
from scribe.workspace.sandbox.protection import Protection

from .catalog import ListedTool
from .link import Link, McpCallError, State
from .spec import ServerSpec

# The longest a call is waited for without looking whether the turn was cancelled.
WAIT_SLICE_S = 0.05
# Past its deadline, a call's future is given this long to come back with its own timeout error.
GRACE_S = 5.0
# Closing a server: stdin closed, a grace period, SIGTERM, SIGKILL (the SDK's order, each bounded).
CLOSE_TIMEOUT_S = 6.0


@dataclass(frozen=True)
class ServerState:
    """A snapshot of one configured server, for pinning and for `scribe mcp list`."""

    name: str
    transport: str
    where: str
    source: str
    state: State
    error: str | None
    tools: tuple[ListedTool, ...]
    skipped: tuple[str, ...]


class McpHub:
    def __init__(self, specs: Sequence[ServerSpec], workspace: Path, *, log_dir: Path | None = None,
                 start_timeout_s: float = 5.0, call_timeout_s: float = 120.0,
                 protection: Protection | None = None) -> None:
        """`protection`: the command sandbox, which the workspace's stdio servers start in."""
        self.specs = {spec.name: spec for spec in sorted(specs, key=lambda s: s.name)}
        self.workspace, self.log_dir, self.protection = workspace, log_dir, protection
        self.start_timeout_s, self.call_timeout_s = start_timeout_s, call_timeout_s
        self._links: dict[str, Link] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self, names: Iterable[str] | None = None) -> None:
        """Start connecting to these servers (default: all), without waiting."""
        wanted = list(self.specs) if names is None else [n for n in names if n in self.specs]
        if not wanted:
            return
        loop = self._ensure_loop()
        for name in wanted:
            link = self._link(name)
            if link.state != "ready":
                link.settled.clear()  # so a wait() from now on waits for this start
            loop.call_soon_threadsafe(link.begin)

    def wait(self, timeout_s: float | None = None) -> list[ServerState]:
        """Wait until every started server is ready or failed, at most `timeout_s` (default:
        the start-up limit) in all; the states then, of every configured server."""
        deadline = time.monotonic() + (self.start_timeout_s if timeout_s is None else timeout_s)
        for link in list(self._links.values()):
            link.settled.wait(max(0.0, deadline - time.monotonic()))
        return self.states()

    def states(self) -> list[ServerState]:
        out = []
        for name, spec in self.specs.items():
            link = self._links.get(name)
            state: State = link.state if link else "not started"
            out.append(ServerState(
                name=name, transport=spec.transport, where=spec.where(), source=spec.source, state=state,
                error=link.error if link else None,
                tools=tuple(link.tools) if link and state == "ready" else (),
                skipped=tuple(link.skipped) if link else (),
            ))
        return out

    def close(self) -> None:
        """Stop every server and the loop. Safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        async def stop_all() -> None:
            tasks = [t for t in (link.end() for link in self._links.values()) if t is not None]
            if tasks:
                await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_S)

        try:
            asyncio.run_coroutine_threadsafe(stop_all(), loop).result(CLOSE_TIMEOUT_S + 1)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass  # a server that will not stop is abandoned; its stdin is closed, so it gets EOF
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=2)

    def __enter__(self) -> McpHub:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls --------------------------------------------------------------------------------------

    def call(self, server: str, tool: str, args: dict[str, Any], timeout_s: float | None = None,
             cancelled: threading.Event | None = None) -> dict[str, Any]:
        """Call `tool` of `server` and return its CallToolResult as JSON. Starts (or restarts)
        the server if need be. Raises McpCallError with one line on any failure; a Ctrl-C
        cancels the call on the server and is re-raised."""
        spec = self.specs.get(server)
        if spec is None:
            raise McpCallError(f"MCP server '{server}' is no longer configured")
        timeout = timeout_s if timeout_s is not None else (spec.timeout_s or self.call_timeout_s)
        loop = self._ensure_loop()
        link = self._link(server)
        future = asyncio.run_coroutine_threadsafe(self._call(link, tool, args, timeout), loop)
        try:
            return _result(future, self.start_timeout_s + timeout + GRACE_S, cancelled)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallError(f"MCP server '{server}' did not answer within {timeout:g} s "
                               "(mcp_call_timeout_s); the call was cancelled") from None
        except KeyboardInterrupt:
            future.cancel()  # cancels the request task; the SDK tells the server
            raise

    async def _call(self, link: Link, tool: str, args: dict[str, Any], timeout: float) -> dict[str, Any]:
        name = link.spec.name
        if not await link.usable(self.start_timeout_s):
            why = link.error or (f"it did not finish starting within {self.start_timeout_s:g} s "
                                 f"(mcp_start_timeout_s){link.junk_note()}")
            raise McpCallError(f"MCP server '{name}' is not available: {why}")
        if all(t.tool != tool for t in link.tools):
            raise McpCallError(f"MCP server '{name}' no longer offers the tool '{tool}' (this session's tools "
                               "were fixed when it began; a new session lists the server's tools anew)")
        return await link.call(tool, args, timeout)

    # -- the loop ------------------------------------------------------------------------------------

    def _link(self, name: str) -> Link:
        with self._lock:
            link = self._links.get(name)
            if link is None:
                link = self._links[name] = Link(self.specs[name], self.workspace, self.log_dir, self.protection)
            return link

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise McpCallError("the MCP servers of this process have been stopped")
            if self._loop is None:
                quiet_sdk_logging()
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="scribe-mcp", daemon=True)
                self._thread.start()
            return self._loop


def quiet_sdk_logging() -> None:
    """The SDK logs what it drops (a line that is not JSON-RPC, a server that failed) at WARNING
    and above, which Python would print on the terminal scribe draws on. The links report each
    of those as one line of their own, so the SDK's records go nowhere."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def _result(future: concurrent.futures.Future[dict[str, Any]], timeout_s: float,
            cancelled: threading.Event | None) -> dict[str, Any]:
    """The call's answer, waited for in slices a cancel can end (KeyboardInterrupt)."""
    until = time.monotonic() + timeout_s
    while (left := until - time.monotonic()) > 0:
        stop_if_cancelled(cancelled)
        try:
            return future.result(min(left, WAIT_SLICE_S))
        except concurrent.futures.TimeoutError:
            continue
    raise concurrent.futures.TimeoutError
