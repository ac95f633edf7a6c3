"""web_fetch: a page on a local server read as text through the real executable and the fake
API, refused in read-only, asked for in accept-edits unless its domain is listed; present only
in sessions that started with the setting on; and what a hostile server or URL tries, refused."""

from __future__ import annotations

import re
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import events_of, run_scribe, scribe_env, session_logs
from scribe.fakeapi import FakeMessagesServer, Reply, tool_use_block
from scribe.log.events import SessionEvent, ToolResultEvent
from scribe.tools.base import ToolError
from scribe.tools.web import WebLimits, check_url, fetch

PAGE = (b"<!doctype html><html><head><title>Release notes</title><script>steal()</script>"
        b"<style>p{}</style></head><body><nav>Home | Blog</nav><main><h1>Version 2.1</h1>"
        b"<p>The <b>frobnicate</b> flag is <a href='/flags'>gone</a>.</p><pre>pip install thing==2.1</pre>"
        b"</main><footer>(c) someone</footer></body></html>")


class Site(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path == "/notes":
            self._send(200, PAGE, "text/html; charset=utf-8")
        elif self.path == "/moved":
            self.send_response(301)
            self.send_header("Location", "/notes")
            self.end_headers()
        elif self.path == "/metadata":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
        elif self.path == "/bomb":  # 64 MB of zeros in about 64 KB
            self._send(200, BOMB, "text/plain", gzipped=True)
        elif self.path == "/trickle":  # a byte at a time, for ever (slow loris)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(600):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                return
        elif self.path == "/utf7":
            self._send(200, b"+ADw-script+AD4-alert(1)+ADw-/script+AD4-", "text/html; charset=utf-7")
        elif self.path == "/binary":
            self._send(200, b"\x7fELF\x02\x01", "application/octet-stream")
        else:
            self._send(404, b"<html><body><p>no such page</p></body></html>", "text/html")

    def _send(self, status: int, body: bytes, kind: str, *, gzipped: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _bomb() -> bytes:
    """64 MB of zeros as about 64 KB of gzip, made a megabyte at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1024 * 1024)
    return b"".join(packer.compress(zeros) for _ in range(64)) + packer.flush()


BOMB = _bomb()


@pytest.fixture
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def run_fetch(workspace: Path, home: Path, url: str, *flags: str, **env: str) -> tuple[str, ToolResultEvent, SessionEvent]:
    """`scribe run` whose model fetches `url` once; the result the log holds."""
    server = FakeMessagesServer([Reply([tool_use_block("web_fetch", {"url": url})]), Reply.text("Read it.")])
    try:
        ran = run_scribe(["run", *flags, "what changed in 2.1?"], workspace,
                         scribe_env(server.start(), home, **env))
    finally:
        server.stop()
    assert ran.code == 0, ran.err
    log = session_logs(workspace)[-1]
    [result] = [e for e in events_of(log) if isinstance(e, ToolResultEvent)]
    return ran.err, result, events_of(log)[0]  # type: ignore[return-value]


def test_a_page_is_read_as_markdown_and_the_tool_is_there_only_when_the_setting_was(
        workspace: Path, home: Path, site: str) -> None:
    on = {"SCRIBE_WEB_FETCH": "1", "SCRIBE_WEB_FETCH_DOMAINS": "127.0.0.1"}
    _, result, header = run_fetch(workspace, home, f"{site}/moved", "-p", "full-auto", **on)
    assert not result.is_error, result.output
    assert result.output.startswith(f"{site}/notes — HTTP 200 OK, text/html, redirected from {site}/moved")
    assert "# Version 2.1" in result.output and "The **frobnicate** flag is [gone](/flags)." in result.output
    assert "pip install thing==2.1" in result.output
    for furniture in ("steal()", "Home | Blog", "(c) someone", "p{}"):
        assert furniture not in result.output
    assert [t["name"] for t in header.tools][-2:] == ["web_fetch", "task"] and header.config["web_fetch"] is True
    # a continued session keeps its tools whatever the setting says now, and so its cached prefix
    server = FakeMessagesServer([Reply.text("Yes."), Reply.text("No tool.")])
    try:
        env = scribe_env(server.start(), home, SCRIBE_WEB_FETCH="0")
        assert run_scribe(["run", "-c", "still there?"], workspace, env).code == 0
        assert run_scribe(["run", "a new session"], workspace, env).code == 0
    finally:
        server.stop()
    continued, fresh = (r.json["tools"] for r in server.requests)
    assert continued == header.tools
    assert "web_fetch" not in [t["name"] for t in fresh] and fresh == header.tools[:-2] + header.tools[-1:]


def test_read_only_refuses_and_accept_edits_fetches_only_a_listed_domain(
        workspace: Path, home: Path, site: str) -> None:
    listed = {"SCRIBE_WEB_FETCH": "true", "SCRIBE_WEB_FETCH_DOMAINS": "127.0.0.1"}
    _, refused, _ = run_fetch(workspace, home, f"{site}/notes", "-p", "read-only", **listed)
    assert refused.is_error and refused.extra["permission"] == "denied"
    assert refused.output == ("web_fetch is not allowed in permission mode 'read-only'; the user can allow it "
                              "with --permission-mode accept-edits")
    _, allowed, _ = run_fetch(workspace, home, f"{site}/notes", **listed)  # accept-edits, the headless default
    assert not allowed.is_error and "# Version 2.1" in allowed.output and "permission" not in allowed.extra
    # (a global address, never connected to: the mode refuses it first)
    _, unlisted, _ = run_fetch(workspace, home, "http://93.184.216.34/notes", SCRIBE_WEB_FETCH="true")
    assert unlisted.is_error and unlisted.output.startswith(
        "web_fetch is not allowed in permission mode 'accept-edits'; the user can allow it with --permission-mode "
        "full-auto, or list the domain in the web_fetch_domains setting")
    # a URL the tool never fetches is refused by the tool, in its words, before any mode is asked:
    # no other mode would fetch it
    _, inside, _ = run_fetch(workspace, home, f"{site}/notes", SCRIBE_WEB_FETCH="true")
    assert inside.is_error and "127.0.0.1 is a loopback, private, link-local or reserved address" in inside.output
    assert "permission" not in inside.extra
    # full-auto fetches unlisted domains, but never a loopback address that is not named
    _, loopback, _ = run_fetch(workspace, home, f"{site}/notes", "-p", "full-auto", SCRIBE_WEB_FETCH="true")
    assert loopback.is_error and "127.0.0.1 is a loopback, private, link-local or reserved address" in loopback.output


def test_a_secret_in_the_url_and_in_the_page_never_leaves_or_comes_back(
        workspace: Path, home: Path, site: str) -> None:
    env = {"SCRIBE_WEB_FETCH": "1", "SCRIBE_WEB_FETCH_DOMAINS": "127.0.0.1", "DEPLOY_TOKEN": "tok-0123456789abcdef"}
    _, result, _ = run_fetch(workspace, home, f"{site}/notes?t=tok-0123456789abcdef", "-p", "full-auto", **env)
    assert result.is_error and "holds a secret value of this session; it is not fetched" in result.output
    assert "tok-0123456789abcdef" not in result.output


LOCAL = WebLimits(max_bytes=100_000, timeout_s=2.0, domains=("127.0.0.1",))


@pytest.mark.parametrize(("path", "refusal"), [
    ("/metadata", "169.254.169.254 is not in web_fetch_domains"),
    ("/binary", "is application/octet-stream, not text"),
])
def test_what_a_hostile_server_answers_is_refused(site: str, path: str, refusal: str) -> None:
    with pytest.raises(ToolError, match=refusal):
        fetch(site + path, LOCAL)


def test_a_gzip_bomb_stops_at_the_cap_and_a_trickle_at_the_deadline(site: str) -> None:
    page = fetch(f"{site}/bomb", LOCAL)
    assert page.cut and page.size == LOCAL.max_bytes
    assert "[cut at 100,000 bytes (web_fetch_max_bytes): the page is longer]" in page.text()
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"did not arrive within 2 s \(web_fetch_timeout_s\)"):
        fetch(f"{site}/trickle", LOCAL)
    assert time.monotonic() - started < 10  # cut at its deadline, not after the server's 30 s


def test_a_page_that_names_utf7_is_read_as_utf8_so_its_markup_stays_visible(site: str) -> None:
    page = fetch(f"{site}/utf7", LOCAL)
    assert "+ADw-script+AD4-" in page.body and "<script>" not in page.body


@pytest.mark.parametrize(("url", "refusal"), [
    ("file:///etc/passwd", "web_fetch reads http and https URLs only, not file"),
    ("ftp://example.com/x", "web_fetch reads http and https URLs only, not ftp"),
    ("http://user:secret@example.com/", "web_fetch does not send credentials"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a loopback, private, link-local or reserved"),
    ("http://[::1]:8080/", "::1 is a loopback, private, link-local or reserved"),
    ("http://10.0.0.8/", "10.0.0.8 is a loopback, private, link-local or reserved"),
    ("http://[::ffff:127.0.0.1]/", "is a loopback, private, link-local or reserved"),
    ("http://0.0.0.0:8000/", "0.0.0.0 is a loopback, private, link-local or reserved"),
])
def test_a_url_that_reaches_inside_or_carries_credentials_is_refused_before_connecting(url: str, refusal: str) -> None:
    with pytest.raises(ToolError, match=refusal.replace("[", r"\[")):
        fetch(url, WebLimits(timeout_s=2.0))


@pytest.mark.parametrize(("address", "refusal"), [
    ("64:ff9b::7f00:1", "reaches 127.0.0.1 (NAT64)"),
    ("64:ff9b::a9fe:a9fe", "reaches 169.254.169.254 (NAT64)"),
    ("64:ff9b:1::a9fe:a9fe", "is a local-use NAT64 address"),
    ("64:ff9b:1:ffff::808:808", "is a local-use NAT64 address"),
    ("2002:7f00:1::", "reaches 127.0.0.1 (6to4)"),
    ("2002:a00:1:1::1", "reaches 10.0.0.1 (6to4)"),
    ("2001:0:808:808::80ff:fffe", "is a loopback"),  # Teredo: server 8.8.8.8, client 127.0.0.1
    ("::7f00:1", "reaches 127.0.0.1 (IPv4-compatible)"),
    ("::ffff:0:a9fe:a9fe", "reaches 169.254.169.254 (IPv4-translated)"),
    ("::ffff:a9fe:a9fe", "is a loopback"),  # IPv4-mapped
])
def test_an_ipv6_address_that_carries_an_inside_ipv4_one_is_refused(address: str, refusal: str) -> None:
    """NAT64, 6to4, Teredo and the IPv4 forms of IPv6 reach the IPv4 address they carry: judged by
    it, whatever Python's `is_global` says of the IPv6 prefix (3.11 calls the first six global)."""
    with pytest.raises(ToolError, match=re.escape(f"web_fetch: {address} {refusal}")):
        check_url(f"http://[{address}]:8080/", WebLimits(timeout_s=2.0))
    assert check_url(f"http://[{address}]:8080/", WebLimits(domains=(address,))).address == address


@pytest.mark.parametrize("address", ["64:ff9b::808:808", "2002:808:808::1", "2606:4700:4700::1111"])
def test_an_ipv6_address_that_carries_a_public_ipv4_one_is_fetched(address: str) -> None:
    assert check_url(f"http://[{address}]/", WebLimits(timeout_s=2.0)).address == address


@pytest.mark.parametrize(("mode", "unlisted", "listed"), [
    ("read-only", "deny", "deny"),
    ("ask", "ask", "allow"),
    ("accept-edits", "ask", "allow"),  # it accepts file edits; a fetch still asks, as in Claude Code
    ("full-auto", "allow", "allow"),
])
def test_the_permission_modes_decide_a_fetch_as_they_decide_a_command(mode: str, unlisted: str, listed: str) -> None:
    from scribe.agent.permissions import PermissionPolicy
    from scribe.tools.base import kind_of
    from scribe.tools.web import WebFetch

    tool = WebFetch(WebLimits(domains=("docs.python.org",)))
    policy = PermissionPolicy(mode)
    assert policy.verdict(tool.name, kind_of(tool, {"url": "https://example.com/"})) == unlisted
    assert policy.verdict(tool.name, kind_of(tool, {"url": "https://docs.python.org/3/"})) == listed
    assert policy.verdict(tool.name, kind_of(tool, {"url": "https://en.docs.python.org/x"})) == listed
    assert kind_of(tool, {"url": "https://docs.python.org.evil.com/"}) == "web"
