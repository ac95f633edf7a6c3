"""`scribe log serve`: the session page on 127.0.0.1, following the session as it grows.

It answers only its person: every address it serves starts with a random token (`/TOKEN/`, 192
bits, new each time it starts) that only the address it prints holds, and a request without it
gets 403. Anyone else on the machine can reach the port (loopback is shared by every local
user), not the transcript. The page's own requests are relative, so they carry the token.

The server only serves the page (cli/log/page): on each request it reads the lines appended to
the log since the last one (complete lines only, log/follow.py), adds them to the page, and
answers. The open page asks `update` twice a second, saying how much it holds; the answer is
what changed since (the sections, the turns that grew, the new calls and blocks), so a new
event costs a long session's page little more than a short one's.
"""

from __future__ import annotations

import errno
import hmac
import json
import secrets
import signal
import sys
import threading
from http import HTTPStatus
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import parse_qs

import typer

from scribe.log.attachments import ImageStore
from scribe.log.codec import EventFormatError, from_record
from scribe.log.events import Event
from scribe.log.follow import LineFollower
from scribe.log.store import SessionFile

from ..exits import fail
from .common import SESSION_HELP, load, log_command, resolve_session, workspace_prices

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

HOST = "127.0.0.1"


class LivePage:
    """A session's page kept up to date with its log; safe to use from the server's threads."""

    def __init__(self, found: SessionFile) -> None:
        from .page import SessionPage  # here: markdown-it and the page's modules cost `scribe --help` nothing

        read = load(found)
        self.page = SessionPage(found.id, workspace_prices(), images=ImageStore.for_log(found.path))
        self.page.extend(read.events)
        self._follower = LineFollower(found.path, read.size - len(read.torn_tail))
        self._lock = threading.Lock()
        self._html: tuple[str, str] | None = None  # (version, page)
        self.name = found.path.name

    def refresh(self) -> None:
        """Take in what was appended."""
        with self._lock:
            events: list[Event] = []
            for line in self._follower.read():
                if not line.strip():
                    continue
                try:
                    record: Any = json.loads(line)
                    events.append(from_record(record))
                except (json.JSONDecodeError, UnicodeDecodeError, EventFormatError) as exc:
                    print(f"scribe: note: {self.name}: a line that is not an event ({exc}); skipped", file=sys.stderr)
            self.page.extend(events)

    def html(self) -> str:
        self.refresh()
        with self._lock:
            version = self.page.version
            if self._html is None or self._html[0] != version:
                self._html = (version, self.page.html(live=True))
            return self._html[1]

    def update(self, query: str) -> dict[str, Any]:
        """What changed for a page holding `events`, `calls` and `blocks` (numbers in the query)."""
        held = parse_qs(query)
        try:
            events, calls, blocks = (int(held.get(name, ["0"])[0]) for name in ("events", "calls", "blocks"))
        except ValueError:
            events = calls = blocks = 0
        self.refresh()
        with self._lock:
            return self.page.update(events, calls, blocks)


def new_token() -> str:
    return secrets.token_urlsafe(24)


def make_server(live: LivePage, port: int, token: str) -> ThreadingHTTPServer:
    # Here, not at the top: http.server costs every other `scribe log` command 15 ms to import.
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    prefix = f"/{token}/".encode()

    class Handler(BaseHTTPRequestHandler):
        server_version = "scribe"
        sys_version = ""

        def do_GET(self) -> None:  # noqa: N802 (the name http.server calls)
            # A page elsewhere could reach this port under another name (DNS rebinding): answer
            # only to the names of this machine's loopback address.
            address = self.server.server_address
            bound = address[1] if isinstance(address, tuple) else ""
            if self.headers.get("Host", "") not in (f"{HOST}:{bound}", f"localhost:{bound}"):
                self._send(HTTPStatus.FORBIDDEN, "text/plain", b"scribe log serve answers only to 127.0.0.1\n")
                return
            path, _, query = self.path.partition("?")
            # The token first, compared in constant time: without it, nothing (not even a 404).
            given = path.encode("utf-8", errors="replace")[:len(prefix)]
            if not hmac.compare_digest(given, prefix):
                self._send(HTTPStatus.FORBIDDEN, "text/plain",
                           b"scribe log serve answers only at the address it printed (with its token)\n")
                return
            path = path[len(prefix) - 1:]
            if path == "/":
                self._send(HTTPStatus.OK, "text/html; charset=utf-8", live.html().encode("utf-8"))
            elif path == "/update":
                body = json.dumps(live.update(query), ensure_ascii=False, separators=(",", ":"))
                self._send(HTTPStatus.OK, "application/json; charset=utf-8", body.encode("utf-8"))
            else:
                self._send(HTTPStatus.NOT_FOUND, "text/plain", b"not found: this server has / and /update\n")

        def _send(self, status: HTTPStatus, kind: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # a request per half second would bury the one line that matters

    try:
        server = ThreadingHTTPServer((HOST, port), Handler)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise fail(f"port {port} is in use on {HOST}; give another --port, or none to pick a free one") from None
        raise fail(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}") from None
    server.daemon_threads = True
    return server


def serve_page(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                      help="The port to listen on. [default: a free one]", show_default=False)] = 0,
) -> None:
    """Serve a session's page (the one `scribe log html` writes) on 127.0.0.1 and follow the
    session as it grows: an open page shows each new event within a second or so of its
    append. Prints the address, which holds a random token: a request without it is refused
    (403), so another user of this machine cannot read the session. Listens on the loopback
    address only; Ctrl-C stops it."""
    with log_command():
        found = resolve_session(session)
        live = LivePage(found)
        token = new_token()
        server = make_server(live, port, token)
        url = f"http://{HOST}:{server.server_address[1]}/{token}/"
        print(f"scribe log serve: session {found.id} at {url} (following its log; Ctrl-C stops)", flush=True)
        # Stopping is the normal way out: Ctrl-C (even when started with SIGINT ignored) and
        # SIGTERM both end it cleanly, with exit 0.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            server.serve_forever(poll_interval=0.25)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
        print("scribe log serve: stopped", flush=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
