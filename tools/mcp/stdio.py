"""The stdio connection to an MCP server, with its answers bounded: what a server writes can make
one call fail, never the calls after it, and never in more than about a second.

The SDK's own stdio transport reads a line by joining what it has to each new chunk, so a 50 MB
answer costs quadratic time and holds the connection (every later call timed out behind it), and
a line that is not JSON-RPC is passed on as an error nobody waits for (the call it was meant to
answer ran into its timeout). This one, a drop-in for `mcp.client.stdio.stdio_client` (same
streams, same shutdown order: stdin closed, a grace period, then the process group ended):

- reads lines as bytes, keeping at most MAX_MESSAGE_BYTES of one; a longer answer is dropped as
  it arrives and its call gets an error result saying how large it was when its line ends, or
  STALL_S after its bytes stop coming with no line end (the id is found in the answer's head or
  tail, or it is the one call in flight);
- fails the call of an answer nested deeper than the JSON reader goes, at once (Python's own
  reader would overflow its stack on it, and the reading would stop);
- answers a call at once with an error when its answer is JSON but not JSON-RPC (the id is
  there), and within JUNK_GRACE_S when the server writes something else that is not JSON-RPC on
  stdout and no valid answer follows;
- keeps track of the requests in flight to do so (what was sent, what was answered or cancelled).

The errors carry codes of the implementation-defined band (TOO_LARGE, MALFORMED), so the link can
tell the person what happened rather than that the server refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
import anyio.abc
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from scribe.tools.textio import human_bytes, one_line

# The longest answer read: an image of 5 MB or a PDF of 10 MB is 13.4 MB as base64 in JSON.
MAX_MESSAGE_BYTES = 16_000_000
# After a line that is not JSON-RPC, how long a call in flight may still get its real answer.
JUNK_GRACE_S = 0.5
# An answer over MAX_MESSAGE_BYTES is waited for to its line end while its bytes keep coming (the
# calls after it are then sent to a server done writing it); stopped this long, it is judged.
STALL_S = 1.0
TOO_LARGE = -32011
MALFORMED = -32012
# How much of an oversized line's head and tail is kept to find its id.
_ENDS = 4096
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
# What the JSON reader (pydantic's) says of nesting deeper than it goes.
_RECURSION = "recursion limit exceeded"
# Closing: the server's grace after its stdin closes, then SIGTERM, then SIGKILL (as the SDK's).
CLOSE_GRACE_S = 2.0
KILL_AFTER_S = 2.0


@dataclass
class Line:
    """One line of the server's stdout: its bytes, or the ends of it when it was too long."""

    data: bytes
    size: int  # the whole line's length (so far, when it is not finished)
    tail: bytes = b""
    # Over the limit, with no line end yet, and nothing more coming: judged before it ends.
    unfinished: bool = False
    # Its end, after it was judged unfinished: only a call its tail names (an answer written
    # into it) is still told of it.
    judged: bool = False

    @property
    def too_long(self) -> bool:
        return self.size > len(self.data)


class LineCutter:
    """Bytes in, whole lines out; never holds more than `limit` bytes of one line (and its tail)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._size = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> list[Line]:
        lines: list[Line] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end])
            lines.append(self._take())
            start = end + 1
        self._add(chunk[start:])
        return lines

    def unfinished(self) -> Line | None:
        """The line being read, when it is over the limit already (its head and tail so far)."""
        if self._size <= self.limit:
            return None
        return Line(bytes(self._buffer[:_ENDS]), self._size, self._tail, unfinished=True)

    def _add(self, piece: bytes) -> None:
        room = self.limit - len(self._buffer)
        if room > 0:
            self._buffer += piece[:room]
        self._size += len(piece)
        if self._size > self.limit:
            self._tail = (self._tail + piece)[-_ENDS:]

    def _take(self) -> Line:
        line = Line(bytes(self._buffer), self._size, self._tail if self._size > self.limit else b"")
        self._buffer.clear()
        self._size, self._tail = 0, b""
        return line


def _key(request_id: Any) -> Any:
    """How ids are matched: "7" and 7 are one id (as the SDK matches them)."""
    if isinstance(request_id, str):
        try:
            return int(request_id)
        except ValueError:
            return request_id
    return request_id


@dataclass
class InFlight:
    """The requests sent to the server and not answered yet, and the junk it wrote meanwhile."""

    methods: dict[Any, str] = field(default_factory=dict)  # id -> method
    # Calls given up on (timed out, Ctrl-C) or answered already (scribe answered one for the
    # server): an answer to one of them may still come, and is dropped.
    cancelled: deque[Any] = field(default_factory=lambda: deque(maxlen=256))
    junk: str | None = None  # the first line that was not JSON-RPC, while calls were in flight
    junk_at: float = 0.0
    waiting: tuple[Any, ...] = ()  # the calls in flight when it came

    def sent(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            self.methods[_key(message.id)] = message.method
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = _key((message.params or {}).get("requestId"))
            if self.methods.pop(request_id, None) is not None:
                self.cancelled.append(request_id)

    def answered(self, request_id: Any) -> bool:
        """Whether `request_id` was in flight (it is not any more)."""
        if self.methods.pop(_key(request_id), None) is None:
            return False
        self.cancelled.append(_key(request_id))
        return True

    def late(self, request_id: Any) -> bool:
        """Whether `request_id` is a call given up on: its answer comes too late to matter."""
        return _key(request_id) in self.cancelled

    def only(self) -> Any:
        """The one request in flight, or None when there are none or several."""
        return next(iter(self.methods)) if len(self.methods) == 1 else None

    def saw_junk(self, text: str, now: float) -> None:
        calls = tuple(i for i, method in self.methods.items() if method != "initialize")
        if calls and self.junk is None:
            self.junk, self.junk_at, self.waiting = text, now, calls

    def overdue(self, now: float) -> list[tuple[Any, str]]:
        """The calls that were waiting when junk came and got no answer within the grace."""
        if self.junk is None or now - self.junk_at < JUNK_GRACE_S:
            return []
        late = [(i, self.junk) for i in self.waiting if i in self.methods]
        for request_id, _ in late:
            self.methods.pop(request_id, None)
        self.junk, self.waiting = None, ()
        return late


def error_answer(request_id: Any, code: int, message: str) -> SessionMessage:
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message)))


def judge(line: Line, flight: InFlight, now: float) -> list[SessionMessage | Exception]:
    """What one line of the server's stdout is for the session."""
    if line.too_long:
        if line.unfinished:
            what = (f"the server's answer passed the {human_bytes(MAX_MESSAGE_BYTES)} scribe reads of one answer, "
                    f"then stopped with no line end ({human_bytes(line.size)} so far); it was dropped")
        else:
            what = (f"the server's answer was {human_bytes(line.size)}, over the {human_bytes(MAX_MESSAGE_BYTES)} "
                    "scribe reads of one answer; it was dropped")
        ids = _ids(line.data[:_ENDS], line.tail)
        request_id = _answering(ids, flight) if not line.judged else _named(ids, flight)
        if line.judged and request_id is None:
            return []
        if request_id is not None and flight.answered(request_id):
            return [error_answer(request_id, TOO_LARGE, what)]
        if any(flight.late(i) for i in ids):
            return []
        flight.saw_junk(what, now)
        return [ValueError(what)]
    text = line.data.decode("utf-8", errors="replace")
    if not text.strip():
        return []
    try:
        message = jsonrpc_message_adapter.validate_json(line.data, by_name=False)
    except ValueError as exc:
        if _RECURSION in str(exc):
            return _too_deep(line.data, exc, flight, now)
        return _malformed(text, exc, flight, now)
    if isinstance(message, JSONRPCResponse | JSONRPCError) and not flight.answered(message.id):
        if not flight.late(message.id):
            # An answer to nothing asked (a wrong id): the call it was meant for would wait for ever.
            flight.saw_junk(f"it answered a request never sent (id {message.id!r})", now)
        return []
    return [SessionMessage(message)]


def _ids(*parts: bytes) -> list[Any]:
    """The ids an answer's ends name (a request's or a response's: the caller tells them apart)."""
    return [json.loads(m.group(1)) for part in parts for m in _ID.finditer(part)]


def _named(ids: list[Any], flight: InFlight) -> Any:
    return next((i for i in ids if _key(i) in flight.methods), None)


def _answering(ids: list[Any], flight: InFlight) -> Any:
    """The call an unreadable answer is for: one in flight its ends name, else, when they name
    none already answered (the rest of an answer dropped earlier), the one call in flight."""
    named = _named(ids, flight)
    if named is not None or any(flight.late(i) for i in ids):
        return named
    return flight.only()


def _too_deep(data: bytes, problem: ValueError, flight: InFlight, now: float) -> list[SessionMessage | Exception]:
    """An answer nested deeper than the JSON reader goes: its call is told so at once. The id is
    found in its head, as for an answer too long to read (no reader can take it apart)."""
    what = f"the server's answer is nested too deeply to read ({_first_problem(problem)}); it was dropped"
    ids = _ids(data[:_ENDS])
    request_id = _answering(ids, flight)
    if request_id is not None and flight.answered(request_id):
        return [error_answer(request_id, MALFORMED, what)]
    if any(flight.late(i) for i in ids):
        return []
    flight.saw_junk(what, now)
    return [ValueError(what)]


def _malformed(text: str, problem: ValueError, flight: InFlight, now: float) -> list[SessionMessage | Exception]:
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than Python's stack: not an answer to read
        record = None
    request_id = record.get("id") if isinstance(record, dict) and "method" not in record else None
    if isinstance(request_id, int | str) and flight.answered(request_id):
        return [error_answer(request_id, MALFORMED, f"the server's answer is not valid JSON-RPC "
                                                    f"({_first_problem(problem)}): {_excerpt(text)}")]
    if isinstance(request_id, int | str) and flight.late(request_id):
        return [problem]
    flight.saw_junk(f"it wrote what is not JSON-RPC on stdout: {_excerpt(text)}", now)
    return [problem]


def _first_problem(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()) if not str(p).startswith("JSONRPC"))
            return one_line(f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", "")), 120)
        except (IndexError, TypeError, AttributeError):
            pass
    return one_line(str(exc), 120)


def _excerpt(text: str) -> str:
    return f"`{one_line(text, 100)}`"


@contextlib.asynccontextmanager
async def bounded_stdio(argv: Sequence[str], env: Mapping[str, str], cwd: str,
                        errlog: IO[str]) -> AsyncIterator[tuple[Any, Any]]:
    """Start `argv` (a new process group) and connect to it over its stdin and stdout."""
    process = await _started(argv, env, cwd, errlog)
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    flight = InFlight()
    cutter = LineCutter(MAX_MESSAGE_BYTES)
    stopping = False
    last_bytes_at = anyio.current_time()
    stalled = False  # the over-long line being read was judged already, before its end

    async def deliver(items: list[SessionMessage | Exception]) -> None:
        for item in items:
            await read_in.send(item)

    async def stdout_reader() -> None:
        nonlocal last_bytes_at, stalled
        assert process.stdout is not None
        try:
            async with read_in:
                try:
                    async for chunk in process.stdout:
                        last_bytes_at = anyio.current_time()
                        for line in cutter.feed(chunk):
                            if stalled:  # its call was told when the line stopped
                                stalled, line.judged = False, True
                            await deliver(judge(line, flight, anyio.current_time()))
                finally:
                    await _drain(process)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError):
            pass  # closing, or the session is gone: the read stream's end says so

    async def overdue_calls() -> None:
        """Fail the calls a line of junk left without an answer, once their grace is over, and the
        call of an answer that passed the size limit and then stopped short of its line end."""
        nonlocal stalled
        while not stopping:
            await anyio.sleep(JUNK_GRACE_S / 5)
            now = anyio.current_time()
            items: list[SessionMessage | Exception] = []
            line = cutter.unfinished()
            if line is not None and not stalled and now - last_bytes_at >= STALL_S:
                stalled = True
                items += judge(line, flight, now)
            items += [error_answer(i, MALFORMED, f"{why}; no answer followed") for i, why in flight.overdue(now)]
            try:
                await deliver(items)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_out:
                async for session_message in write_out:
                    flight.sent(session_message.message)
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_in.aclose()  # the server stopped reading: the session sees the connection end

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(stdout_reader)
        tasks.start_soon(stdin_writer)
        tasks.start_soon(overdue_calls)
        try:
            yield read_out, write_in
        finally:
            stopping = True
            with anyio.CancelScope(shield=True):
                read_out.close()
                write_in.close()
                await _stop(process)
                for stream in (read_out, write_in, read_in, write_out):
                    await stream.aclose()
            tasks.cancel_scope.cancel()


async def _started(argv: Sequence[str], env: Mapping[str, str], cwd: str, errlog: IO[str]) -> anyio.abc.Process:
    """The server's process, started whole even when the start is cancelled (scribe closing while
    a server starts): asyncio's own clean-up of a cancelled start could wait forever on a
    sandboxed one and leave it running after scribe had gone. A cancelled start is stopped here,
    then the cancel goes on."""
    spawn = asyncio.ensure_future(anyio.open_process(list(argv), env=dict(env), stderr=errlog, cwd=cwd,
                                                     start_new_session=True))
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _stop(await spawn)
        raise


async def _drain(process: anyio.abc.Process) -> None:
    """Read and drop what the server still writes, so that a server flushing its output on the
    way out is not blocked on a full pipe."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), contextlib.suppress(
            anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
        while True:
            await process.stdout.receive()


async def _stop(process: anyio.abc.Process) -> None:
    """Close its stdin; a grace period; then the whole process group (SIGTERM, then SIGKILL)."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, CLOSE_GRACE_S):
        await terminate_posix_process_tree(process, KILL_AFTER_S)
        await _exited(process, KILL_AFTER_S)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    # The asyncio transport would otherwise stay open (and warn when collected) while a process
    # that survived holds a pipe; nothing public reaches it.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if callable(getattr(transport, "close", None)):
        with contextlib.suppress(PermissionError):
            transport.close()  # type: ignore[union-attr]


async def _exited(process: anyio.abc.Process, within_s: float) -> bool:
    with anyio.move_on_after(within_s):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
