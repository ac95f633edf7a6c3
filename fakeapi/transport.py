"""HTTP/1.1 plumbing: read a request, answer JSON, stream SSE, or hang up on purpose.

Streams use chunked transfer encoding, like the real API behind its proxies. That
matters for faults: with chunking, closing the socket mid-stream is a protocol
error the client must notice, whereas a body delimited by connection close would
just look like a short, successful stream.
"""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from .wire import json_bytes

__all__ = ["ExchangeHandler", "MessagesHTTPServer", "StreamEnding"]

StreamEnding = Literal["end", "cut", "stall"]


class ClientGone(ConnectionResetError):
    """The client closed its connection before its request was complete."""


class ExchangeHandler(BaseHTTPRequestHandler):
    """One connection; each POST is passed to the server's `dispatch` callback."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's pooled client expects
    # Headers and body go out in separate writes; with Nagle on, delayed ACKs cost
    # ~40 ms per request on loopback.
    disable_nagle_algorithm = True
    server: MessagesHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        # Library code stays quiet; everything worth seeing is in server.requests.
        return

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            # A client that abandons a stream with bytes unread resets the connection; the
            # next read of a request line then fails. Nothing was asked, so nothing is owed.
            self.close_connection = True

    def finish(self) -> None:
        try:
            super().finish()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the flush of a reset connection: the client is already gone

    def do_POST(self) -> None:
        try:
            self.server.dispatch(self)
        except (BrokenPipeError, ConnectionResetError):
            # The client went away (e.g. closed a stream early); nothing left to answer.
            self.close_connection = True

    def do_GET(self) -> None:
        found = self.server.answer_get(self.path) if self.server.answer_get is not None else None
        if found is None:
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}})
        else:
            self.send_json(200, found)

    def read_body(self) -> bytes:
        """The whole body. A client that goes away before sending all of it (killed mid-send)
        raises ClientGone: like the real API, the server never saw a request, so nothing is
        recorded or answered."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        if len(body) < length:
            raise ClientGone(f"the client sent {len(body)} of {length} bytes and hung up")
        return body

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            line = self.rfile.readline()
            if not line:
                raise ClientGone("the client hung up inside a chunked body")
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                # Skip trailers up to the blank line that ends the body.
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            part = self.rfile.read(size)
            if len(part) < size:
                raise ClientGone("the client hung up inside a chunked body")
            parts.append(part)
            self.rfile.readline()

    def send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self.send_raw(status, "application/json", json_bytes(payload), headers)

    def send_raw(self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        """A complete response of exactly these bytes."""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def send_truncated_json(self, payload: dict[str, Any], headers: dict[str, str]) -> None:
        """Promise a full JSON body, send half, then hang up: a cut non-streamed reply."""
        data = json_bytes(payload)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.hang_up()

    def send_stream(self, chunks: Iterable[bytes], headers: dict[str, str], ending: StreamEnding = "end",
                    wait: Callable[[], object] | None = None, first: Callable[[], object] | None = None) -> None:
        """Send each chunk as one piece of a chunked body, then end it: "end" with the last
        chunk, as a complete response does; "cut" by hanging up at once; "stall" by hanging up
        once `wait` returns. `first`: waited for once the headers are out, before any chunk."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if first is not None:
            self.wfile.flush()
            first()
        for chunk in chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        if ending == "end":
            self.wfile.write(b"0\r\n\r\n")
            return
        if ending == "stall" and wait is not None:
            self.wfile.flush()
            wait()
        self.hang_up()

    def hang_up(self) -> None:
        """Close the connection now, without the bytes that would end a response cleanly."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class MessagesHTTPServer(ThreadingHTTPServer):
    """Threaded server that remembers open connections so `close_all` can end keep-alives."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], dispatch: Callable[[ExchangeHandler], None],
                 answer_get: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        super().__init__(address, ExchangeHandler)
        self.dispatch = dispatch
        # A GET's JSON answer by path, None for 404 (a llama.cpp server answers /props).
        self.answer_get = answer_get
        self.errors: list[BaseException] = []
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Keep unexpected handler failures for inspection instead of printing tracebacks.
        exc = sys.exc_info()[1]
        if exc is not None:
            self.errors.append(exc)

    def close_all(self) -> None:
        """Unblock handler threads idling on keep-alive connections."""
        with self._conn_lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
