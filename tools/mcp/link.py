"""One MCP server's connection, on the hub's event loop: start it, list its tools, call them,
notice when it has gone, and stop it.

A link's owner task holds the SDK client open (`async with`) until told to stop or until the
connection dies; calls run as their own tasks on the same loop. Every way a server can go wrong
(cannot start, exits, hangs, writes what is not JSON-RPC, answers nonsense or too much) ends here
as one line in `error` or a `McpCallError`, never as an exception out of the hub.

How a stdio server starts is decided here, each time it starts (a restart after a crash too):
a server the workspace defines runs in the command sandbox (workspace/sandbox/protection.py), without the
secrets of scribe's environment; one that runs outside it (its `sandbox = false`, or no sandbox
on this machine) starts only while the files it runs are the ones the person confirmed
(tools/mcp/pins.py). A server of the person's own config runs as configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import IO, Any, Literal

from scribe.tools.base import ToolError
from scribe.tools.secrets import command_env, is_secret
from scribe.tools.textio import one_line, plural
from scribe.workspace.sandbox.protection import Protection

from .catalog import ListedTool, listed_tools
from .pins import content_pin, outside_python, program_of, server_cwd, what_changed
from .spec import ServerSpec, safe

State = Literal["not started", "starting", "ready", "failed", "stopped"]

# Most pages of a tools/list answer read (a server whose cursor never ends cannot hang start-up).
MAX_PAGES = 100


class McpCallError(ToolError):
    """A call to an MCP tool did not produce a result: the server is down, hung or answered
    something that is not an MCP result. The text is the one line the model and person read."""


class NotConfirmed(Exception):
    """A workspace's server would run outside the sandbox on files the person has not confirmed."""


class Link:
    """Owned by the hub; every method but the thread-safe `settled` runs on the hub's loop."""

    def __init__(self, spec: ServerSpec, workspace: Path, log_dir: Path | None,
                 protection: Protection | None = None) -> None:
        self.spec = spec
        self.workspace = workspace
        self.log_dir = log_dir
        self.protection = protection
        self.state: State = "not started"
        self.error: str | None = None
        self.tools: list[ListedTool] = []
        self.skipped: list[str] = []
        self.settled = threading.Event()  # set whenever the state is not "starting"
        self.settled.set()
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Future[None] | None = None
        self._junk = 0  # lines on stdout that were not JSON-RPC
        self._ended = False  # the server's side of the connection has closed

    # -- lifecycle --------------------------------------------------------------------------------

    def begin(self) -> None:
        """Start connecting, unless already connected or connecting."""
        if self._task is not None and not self._task.done():
            if self.state != "starting":
                self.settled.set()  # the old connection is still closing; `usable` restarts it later
            return
        self.state, self.error, self._junk, self._ended = "starting", None, 0, False
        self.settled.clear()
        self._task = asyncio.ensure_future(self._own())

    def end(self) -> asyncio.Future[None] | None:
        """Ask the owner task to close the connection; returns it to await."""
        if self._stop is not None:
            self._stop.set()
        if self._task is not None and not self._task.done() and self.state == "starting":
            self._task.cancel()
        return self._task

    async def _own(self) -> None:
        stop = self._stop = asyncio.Event()
        try:
            async with self._connected() as client:
                listed = await self._list(client)
                self.tools, self.skipped = listed_tools(self.spec.name, listed)
                self._client = client
                self._settle("ready", None)
                await stop.wait()
            if self.state != "failed":
                self._settle("stopped", None)
        except asyncio.CancelledError:
            self._settle("stopped", self.error or "stopped before it was ready")
        except BaseException as exc:  # noqa: B036 — anyio raises groups; every failure becomes one line
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            # A connection already known dead keeps the reason found then (closing it may fail too).
            self._settle("failed", self.error if self.state == "failed" and self.error else self._explain(exc))
        finally:
            self._client = None
            if self.state == "starting":  # whatever happened, nobody waits for a start that is over
                self._settle("failed", self.error or "it stopped while starting")

    def _settle(self, state: State, error: str | None) -> None:
        self.state, self.error = state, error
        self.settled.set()

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[Any]:
        from mcp import Client

        async with contextlib.AsyncExitStack() as stack:
            if self.spec.transport == "http":
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                http = await stack.enter_async_context(create_mcp_http_client(headers=self.spec.headers or None))
                transport: Any = streamable_http_client(self.spec.url, http_client=http)
            else:
                from .stdio import bounded_stdio

                errlog = stack.enter_context(self._errlog())
                argv, env = await self._launch(errlog)
                transport = bounded_stdio(argv, env, str(server_cwd(self.spec, self.workspace)), errlog)
            client = Client(_watched(transport, self._on_end), message_handler=self._on_message)
            yield await stack.enter_async_context(client)

    @property
    def sandboxed(self) -> bool:
        """Whether this stdio server starts in the command sandbox."""
        return self.spec.wants_sandbox and self.protection is not None and self.protection.sandboxed

    async def _launch(self, errlog: IO[str]) -> tuple[list[str], dict[str, str]]:
        """The command line and environment this start uses. Raises NotConfirmed."""
        argv = [self.spec.command, *self.spec.args]
        if self.sandboxed:
            assert self.protection is not None
            if program_of(self.spec, server_cwd(self.spec, self.workspace), os.environ) is None:
                # said as an unsandboxed start says it, not as the sandbox's complaint on stderr
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), self.spec.command)
            env, withheld = sandbox_env(self.spec.env)
            if withheld:
                errlog.write(f"scribe: not passed to the sandboxed server: {', '.join(withheld)} (each holds a "
                             "secret of scribe's environment; `sandbox = false` runs it outside, confirmed)\n")
                errlog.flush()
            return self.protection.wrap(argv, str(server_cwd(self.spec, self.workspace)), env.get("PATH")), env
        if self.spec.owner == "workspace":
            import anyio.to_thread

            pin = await anyio.to_thread.run_sync(content_pin, self.spec, self.workspace)
            confirmed = dict(self.spec.confirmed) if self.spec.confirmed is not None else None
            changed = what_changed(confirmed, pin)
            if changed is not None:
                raise NotConfirmed(f"not started: the workspace defines it and it runs outside the sandbox, with "
                                   f"your environment; {changed} (`scribe trust` confirms it)")
        from mcp.client.stdio import get_default_environment

        env = get_default_environment() | self.spec.env
        if self.spec.owner == "workspace":
            return outside_python(argv, env, program_of(self.spec, server_cwd(self.spec, self.workspace), os.environ))
        return argv, env

    def _errlog(self) -> IO[str]:
        """Where the server's stderr goes: a file per server (the terminal belongs to scribe)."""
        path = self.stderr_path()
        if self.log_dir is None or path is None:
            return open("/dev/null", "w")  # noqa: SIM115 — closed by the exit stack
        self.log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the agent makes it private first
        # What a server prints may hold anything it read: private to the person, as the logs are.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        return open(fd, "w", encoding="utf-8", errors="replace")  # noqa: SIM115

    def stderr_path(self) -> Path | None:
        return self.log_dir / f"{safe(self.spec.name)}.stderr" if self.log_dir is not None else None

    def _on_end(self) -> None:
        """The server's side closed: unless scribe is closing it, the server has gone."""
        self._ended = True
        if self.state == "ready" and not (self._stop is not None and self._stop.is_set()):
            self._gone("it exited")

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):  # a line on stdout that is not JSON-RPC
            self._junk += 1

    async def _list(self, client: Any) -> list[Any]:
        tools: list[Any] = []
        cursor = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    # -- calls --------------------------------------------------------------------------------------

    async def usable(self, start_timeout_s: float) -> bool:
        """Connected and alive, starting (again) if need be and waiting at most `start_timeout_s`
        for it: a server that crashed earlier gets a fresh process at its next call."""
        if self.state == "ready" and await self.alive():
            return True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + start_timeout_s
        if self._task is not None and not self._task.done() and self.state != "starting":
            await asyncio.wait({self._task}, timeout=max(0.0, deadline - loop.time()))  # the old one closing
        if self.state != "starting":
            self.begin()
        while self.state == "starting" and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return self.state == "ready"

    async def alive(self) -> bool:
        """False once the connection has closed (the server exited, even while idle)."""
        return self._client is not None and not self._ended

    async def call(self, tool: str, args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The CallToolResult as JSON, or McpCallError with one line saying what went wrong."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        from .stdio import MALFORMED, TOO_LARGE

        client = self._client
        if client is None:
            raise McpCallError(f"MCP server '{self.spec.name}' is not connected")
        name = self.spec.name
        try:
            result = await client.call_tool(tool, args, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._gone("it stopped during the call")
                raise McpCallError(f"MCP server '{name}' stopped during the call{self._stderr_tail()}; "
                                   "scribe starts it again at the next call") from None
            if exc.code == REQUEST_TIMEOUT:
                raise McpCallError(f"MCP server '{name}' did not answer within {timeout_s:g} s "
                                   "(mcp_call_timeout_s); the call was cancelled") from None
            if exc.code in (TOO_LARGE, MALFORMED):  # the transport's own verdict on the answer
                raise McpCallError(f"MCP server '{name}': {one_line(exc.message, 300)}") from None
            raise McpCallError(f"MCP server '{name}' refused the call: {exc}") from None
        except (ValidationError, RuntimeError) as exc:
            raise McpCallError(f"MCP server '{name}' answered with something that is not a valid tool "
                               f"result: {_first_problem(exc)}") from None
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    def _gone(self, how: str) -> None:
        """The connection died: close what is left, so the next call starts the server anew."""
        self.state, self.error = "failed", f"{how}{self._stderr_tail()}"
        if self._stop is not None:
            self._stop.set()
        self._client = None

    # -- telling what happened ----------------------------------------------------------------------

    def _explain(self, exc: BaseException) -> str:
        try:
            return self._describe(_leaf(exc))
        except Exception as failed:  # noqa: BLE001 — describing a failure must not be one
            return one_line(f"{type(exc).__name__}: {exc} (and describing it failed: {failed!r})", 300)

    def _describe(self, leaf: BaseException) -> str:
        where = self.spec.where()
        if isinstance(leaf, FileNotFoundError | PermissionError) and self.spec.transport == "stdio":
            return f"cannot start `{self.spec.command}`: {leaf.strerror}"
        if isinstance(leaf, NotConfirmed):
            return str(leaf)
        kind = type(leaf).__name__
        if kind in ("ConnectError", "ConnectTimeout"):
            return f"cannot connect to {where} ({one_line(str(leaf), 120) or kind})"
        if kind == "HTTPStatusError":
            response = getattr(leaf, "response", None)
            status = getattr(response, "status_code", "?")
            return f"{where} answered HTTP {status}"
        if kind == "ValidationError":
            return f"answered with something that is not MCP: {_first_problem(leaf)}"
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        if isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED:
            return f"exited during start-up{self._stderr_tail()}{self.junk_note()}"
        return one_line(f"{kind}: {leaf}", 300) + self.junk_note()

    def junk_note(self) -> str:
        if not self._junk:
            return ""
        return (f"; it wrote {plural(self._junk, 'line')} to stdout that "
                f"{'is' if self._junk == 1 else 'are'} not JSON-RPC (is it an MCP server?)")

    def _stderr_tail(self) -> str:
        path = self.stderr_path()
        if path is None:
            return ""
        try:
            with path.open("rb") as handle:
                handle.seek(0, 2)
                handle.seek(max(0, handle.tell() - 2000))
                tail = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        lines = [line for line in tail.splitlines() if line.strip()]
        return f"; its stderr ends: {one_line(lines[-1], 200)}" if lines else ""


def sandbox_env(configured: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """A sandboxed server's environment, as a command's (secrets stripped), with its configured
    `env` except the entries that carry a secret of scribe's environment (a `${TOKEN}` of the
    config expands to one); and the names of those left out."""
    secrets = [v for k, v in os.environ.items() if is_secret(k, v) and len(v) >= 8]
    withheld = sorted(name for name, value in configured.items() if any(secret in value for secret in secrets))
    return {**command_env(), **{k: v for k, v in configured.items() if k not in withheld}}, withheld


def _leaf(exc: BaseException) -> BaseException:
    """The first real failure inside (possibly nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


def _first_problem(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return one_line(f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", "")), 200)
        except (IndexError, TypeError, AttributeError):
            pass
    return one_line(str(exc), 200)


@contextlib.asynccontextmanager
async def _watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[tuple[Any, Any]]:
    """The transport, with its read stream telling `on_end` when it ends: that is how a server
    that exits while idle is noticed before the next call is sent into the void."""
    async with transport as (read, write):
        yield _EndWatch(read, on_end), write


class _EndWatch:
    """A read stream (the SDK's ReadStream protocol) that reports its end."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner, self._on_end = inner, on_end

    def __getattr__(self, name: str) -> Any:  # last_context and anything else the SDK reads
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException:
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _EndWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except (StopAsyncIteration, Exception):
            self._on_end()
            raise

    async def __aenter__(self) -> _EndWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)
