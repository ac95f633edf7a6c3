"""web_fetch: GET one http(s) URL and read it as text (HTML as markdown).

A tool the model calls with a URL it chose, which may come from a page it read, so the fetch is
built for a hostile other end:
- only http and https; no credentials in the URL, and none sent (no cookies, no Authorization,
  no proxy, no .netrc); a URL that holds one of the session's secret values is not fetched;
- the host's addresses are resolved once and checked, and the connection goes to the address
  checked (a DNS answer that changes between the check and the connection cannot redirect it):
  loopback, private, link-local (the cloud metadata service at 169.254.169.254), multicast and
  reserved addresses are refused unless the host is named exactly in `web_fetch_domains`, and so
  is an IPv6 address that carries one (NAT64, 6to4, Teredo, IPv4-mapped: tools/addresses.py);
- with `web_fetch_domains` set, only those domains (and their subdomains) are fetched;
- redirects are followed up to MAX_REDIRECTS, each hop checked like the first;
- the whole fetch, headers and body, has one deadline: a server that trickles bytes (slow loris)
  is cut off when it passes, as is one that never answers;
- at most `max_bytes` of body are read, and gzip or deflate bodies are inflated only up to the
  same bound (a gzip bomb stops there); other encodings are refused;
- only text is read: HTML, plain text, markdown, JSON, XML; a charset the page names is used
  unless it is one that hides markup from a reader (UTF-7), and bytes that do not decode are
  replaced, never fatal; control characters are taken out.
Like every tool's output, what it returns is redacted of secret values (tools/registry.py).
"""

from __future__ import annotations

import codecs
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from scribe import __version__
from scribe.tools.addresses import not_public
from scribe.tools.base import ToolContext, ToolError, ToolKind, ToolOutput
from scribe.tools.webtext import html_to_markdown

MAX_REDIRECTS = 5
CHUNK = 64 * 1024
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml", "application/javascript",
              "application/x-javascript", "application/ld+json", "application/rss+xml", "application/atom+xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE)
# Charsets refused as a page's word: UTF-7 spells `<` as `+ADw-`, markup a reader of the bytes
# would not see. Such a page is read as UTF-8.
_HIDING_CHARSETS = frozenset({"utf-7", "utf_7"})


@dataclass(frozen=True)
class WebLimits:
    """What a fetch may cost, and where it may go (settings: web_fetch_*)."""

    max_bytes: int = 2_000_000
    timeout_s: float = 30.0
    domains: tuple[str, ...] = ()

    def listed(self, host: str) -> bool:
        """`host` is on the allow-list: a listed domain or a subdomain of one."""
        host = host.lower().rstrip(".")
        return any(host == d or host.endswith("." + d) for d in self._domains())

    def named(self, host: str) -> bool:
        """`host` is on the allow-list by its very name (the only way a private address is reached)."""
        return host.lower().rstrip(".") in self._domains()

    def _domains(self) -> list[str]:
        return [d.lower().strip().lstrip("*").lstrip(".").rstrip(".") for d in self.domains if d.strip()]


class FetchRefused(ToolError):
    """A URL, address, redirect or answer web_fetch will not take."""


class WebFetch:
    name = "web_fetch"
    kind: ToolKind = "web"
    description = (
        "Fetch a web page or text document by URL (http or https, GET) and read it as text: HTML comes "
        "back as markdown, plain text, JSON and XML as they are. Use it for documentation, issues and "
        "references the user points to. Large pages are cut; no cookies or credentials are sent."
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The http:// or https:// URL to fetch."}},
        "required": ["url"],
        "additionalProperties": False,
    }

    def __init__(self, limits: WebLimits | None = None) -> None:
        self.limits = limits or WebLimits()

    def summary(self, args: dict[str, Any]) -> str:
        return str(args.get("url", ""))

    def kind_for(self, args: dict[str, Any]) -> ToolKind:
        """A URL on the allow-list runs where reads do (permissions: `web-listed`)."""
        try:
            host = urlsplit(str(args.get("url", ""))).hostname or ""
        except ValueError:
            return self.kind
        return "web-listed" if self.limits.domains and self.limits.listed(host) else self.kind

    def refuses(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """Why the URL would not be fetched, found before anyone is asked about it (the same
        checks `run` makes first: a secret in it, its scheme, credentials, the allow-list, the
        address its host has now); None when it may be. A host that cannot be resolved is left
        to `run` to say."""
        url = str(args["url"]).strip()
        try:
            _secret_free(url, ctx)
            check_url(url, self.limits)
        except FetchRefused as exc:
            return str(exc)
        except ToolError:
            return None
        return None

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        url = str(args["url"]).strip()
        _secret_free(url, ctx)
        page = fetch(url, self.limits)
        return ToolOutput(page.text(), is_error=page.status >= 400)


def _secret_free(url: str, ctx: ToolContext) -> None:
    if ctx.redact(url) != url:
        raise FetchRefused("web_fetch: the URL holds a secret value of this session; it is not fetched")


@dataclass(frozen=True)
class Page:
    url: str  # where it was read from, after redirects
    status: int
    reason: str
    content_type: str
    body: str  # the text as read (markdown for HTML)
    size: int  # bytes of body read (decoded)
    cut: bool  # the body passed max_bytes and was cut there
    redirects: tuple[str, ...] = ()

    def text(self) -> str:
        head = f"{self.url} — HTTP {self.status} {self.reason}".rstrip() + f", {self.content_type or 'no type'}"
        if self.redirects:
            head += f", redirected from {self.redirects[0]}"
        tail = f"\n[cut at {self.size:,} bytes (web_fetch_max_bytes): the page is longer]" if self.cut else ""
        return f"{head}\n\n{self.body.strip() or '(empty page)'}{tail}"


def fetch(url: str, limits: WebLimits) -> Page:
    """GET `url` (redirects followed) within `limits`. Raises FetchRefused or ToolError."""
    deadline = time.monotonic() + limits.timeout_s
    visited: list[str] = []
    for _ in range(MAX_REDIRECTS + 1):
        target = check_url(url, limits)
        response = _Response.open(target, limits, deadline)
        try:
            if response.status in (301, 302, 303, 307, 308) and response.location:
                visited.append(url)
                url = urljoin(url, response.location)
                continue
            return response.page(url, limits, tuple(visited))
        finally:
            response.close()
    raise FetchRefused(f"web_fetch: more than {MAX_REDIRECTS} redirects, starting at {visited[0]}; not followed")


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # path and query, as sent
    address: str  # the checked address the connection goes to


def check_url(url: str, limits: WebLimits) -> Target:
    """Where `url` may be fetched from, or FetchRefused saying why not (see the module's docstring)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise FetchRefused(f"web_fetch: not a valid URL ({exc}): {url!r}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise FetchRefused(f"web_fetch reads http and https URLs only, not {scheme or 'a bare path'}: {url!r}")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused("web_fetch does not send credentials: the URL names a user or password")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise FetchRefused(f"web_fetch: the URL names no host: {url!r}")
    if limits.domains and not limits.listed(host):
        raise FetchRefused(f"web_fetch: {host} is not in web_fetch_domains ({', '.join(limits.domains)}); "
                           "not fetched")
    port = port or (443 if scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(scheme, host, port, path, _address(host, port, limits))


def _address(host: str, port: int, limits: WebLimits) -> str:
    """The first address of `host` that may be reached; FetchRefused when there is none."""
    try:
        found = [str(ipaddress.ip_address(host.strip("[]")))]
        named = host
    except ValueError:
        found = _resolve(host, port, limits.timeout_s)
        named = f"{host} is at {found[0]}, which"
    if limits.named(host):
        return found[0]
    refusals = [not_public(ipaddress.ip_address(address.split("%")[0])) for address in found]
    for address, why in zip(found, refusals, strict=True):
        if why is None:
            return address
    raise FetchRefused(f"web_fetch: {named} {refusals[0]}; not fetched (name the host in web_fetch_domains to "
                       "allow it)")


def _resolve(host: str, port: int, timeout_s: float) -> list[str]:
    """The host's addresses, asked of the resolver with a time limit (getaddrinfo has none)."""
    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        answers = future.result(timeout=min(timeout_s, 10.0))
    except FutureTimeout:
        raise ToolError(f"web_fetch: resolving {host} took too long") from None
    except OSError as exc:
        raise ToolError(f"web_fetch: cannot resolve {host} ({exc.strerror or exc})") from None
    finally:
        pool.shutdown(wait=False)
    addresses = []
    for _family, _type, _proto, _name, sockaddr in answers:
        if str(sockaddr[0]) not in addresses:
            addresses.append(str(sockaddr[0]))
    if not addresses:
        raise ToolError(f"web_fetch: {host} has no address")
    return addresses


class _Connection(http.client.HTTPConnection):
    """An HTTP connection to the address checked, whatever the host name resolves to now."""

    def __init__(self, target: Target, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.target = target

    def connect(self) -> None:
        self.sock = socket.create_connection((self.target.address, self.target.port), self.timeout)
        if self.target.scheme == "https":
            context = ssl.create_default_context()
            self.sock = context.wrap_socket(self.sock, server_hostname=self.target.host)


class _Response:
    def __init__(self, connection: _Connection, response: http.client.HTTPResponse, watchdog: threading.Timer,
                 deadline: float) -> None:
        self.connection, self.response, self.watchdog, self.deadline = connection, response, watchdog, deadline

    @classmethod
    def open(cls, target: Target, limits: WebLimits, deadline: float) -> _Response:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ToolError(f"web_fetch: no answer within {limits.timeout_s:g} s (web_fetch_timeout_s)")
        connection = _Connection(target, remaining)
        # One deadline for the whole fetch: at it the socket is shut, which ends any read that a
        # server keeps alive a byte at a time.
        watchdog = threading.Timer(remaining, _shut, args=(connection,))
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.putrequest("GET", target.path, skip_accept_encoding=True)
            for name, value in _HEADERS.items():
                connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            watchdog.cancel()
            connection.close()
            raise _failure(exc, target, limits, deadline) from None
        return cls(connection, response, watchdog, deadline)

    @property
    def status(self) -> int:
        return self.response.status

    @property
    def location(self) -> str | None:
        return self.response.getheader("Location")

    def page(self, url: str, limits: WebLimits, redirects: tuple[str, ...]) -> Page:
        content_type = self.response.getheader("Content-Type", "") or ""
        media = content_type.split(";")[0].strip().lower()
        if media and not media.startswith(TEXT_TYPES) and not media.endswith(("+json", "+xml")):
            raise FetchRefused(f"web_fetch: {url} is {media}, not text; web_fetch reads HTML and text")
        raw, cut = self._body(limits)
        if not media:
            media = "text/html" if re.match(rb"\s*<(!doctype\s+html|html)", raw[:512], re.IGNORECASE) else "text/plain"
        text = _CONTROL.sub("", _decode(raw, content_type, media).replace("\r\n", "\n").replace("\r", "\n"))
        if media in HTML_TYPES:
            text = html_to_markdown(text)
        return Page(url, self.status, self.response.reason or "", media, text, len(raw), cut, redirects)

    def _body(self, limits: WebLimits) -> tuple[bytes, bool]:
        """The body, inflated, up to max_bytes: (bytes, whether it was cut)."""
        encoding = (self.response.getheader("Content-Encoding") or "identity").strip().lower()
        inflate = _inflater(encoding)
        out = bytearray()
        try:
            while len(out) <= limits.max_bytes:
                if time.monotonic() > self.deadline:
                    raise ToolError(f"web_fetch: the page did not arrive within {limits.timeout_s:g} s "
                                    "(web_fetch_timeout_s)")
                chunk = self.response.read1(CHUNK)
                if not chunk:
                    break
                room = limits.max_bytes + 1 - len(out)
                out += inflate(chunk, room) if inflate else chunk[:room]
        except (OSError, http.client.HTTPException, zlib.error) as exc:
            if time.monotonic() >= self.deadline:
                raise ToolError(f"web_fetch: the page did not arrive within {limits.timeout_s:g} s "
                                "(web_fetch_timeout_s)") from None
            if isinstance(exc, zlib.error):
                raise ToolError(f"web_fetch: the {encoding} body is damaged ({exc})") from None
            raise ToolError(f"web_fetch: the connection broke while reading ({exc})") from None
        cut = len(out) > limits.max_bytes
        return bytes(out[: limits.max_bytes]), cut

    def close(self) -> None:
        self.watchdog.cancel()
        self.connection.close()


_HEADERS = {
    "User-Agent": f"scribe/{__version__} (web_fetch)",
    "Accept": "text/html, text/markdown, text/plain, application/json, application/xml;q=0.9, */*;q=0.1",
    "Accept-Encoding": "gzip, deflate",
    "Connection": "close",
}


def _shut(connection: _Connection) -> None:
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed: nothing left to cut off


def _inflater(encoding: str) -> Any:
    """A function (chunk, room) -> at most `room` inflated bytes, or None for an identity body."""
    if encoding in ("identity", "", "none"):
        return None
    if encoding in ("gzip", "x-gzip"):
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        inflater = zlib.decompressobj()
    else:
        raise FetchRefused(f"web_fetch: the page is {encoding}-encoded; only gzip and deflate are read")

    def inflate(chunk: bytes, room: int) -> bytes:
        # max_length bounds what one chunk may expand to: a small chunk of a bomb stops at `room`.
        return inflater.decompress(chunk, max(room, 1))

    return inflate


def _decode(raw: bytes, content_type: str, media: str) -> str:
    found = re.search(r"charset\s*=\s*[\"']?([A-Za-z0-9._:-]+)", content_type, re.IGNORECASE)
    name = found.group(1) if found else None
    if name is None and media in HTML_TYPES:
        meta = _META_CHARSET.search(raw[:4096])
        name = meta.group(1).decode("ascii", "replace") if meta else None
    encoding = "utf-8"
    if name:
        try:
            known = codecs.lookup(name).name
        except LookupError:
            known = "utf-8"
        encoding = "utf-8" if known in _HIDING_CHARSETS else known
    try:
        return raw.decode(encoding, errors="replace")
    except LookupError:  # a codec that is no text encoding (`base64`, `rot13`)
        return raw.decode("utf-8", errors="replace")


def _failure(exc: BaseException, target: Target, limits: WebLimits, deadline: float) -> ToolError:
    where = f"{target.host}:{target.port}"
    if time.monotonic() >= deadline or isinstance(exc, TimeoutError | socket.timeout):
        return ToolError(f"web_fetch: {where} did not answer within {limits.timeout_s:g} s (web_fetch_timeout_s)")
    if isinstance(exc, ssl.SSLCertVerificationError):
        return ToolError(f"web_fetch: {target.host}'s certificate is not valid ({exc.verify_message})")
    if isinstance(exc, ssl.SSLError):
        return ToolError(f"web_fetch: TLS with {where} failed ({exc.reason or exc})")
    if isinstance(exc, OSError):
        return ToolError(f"web_fetch: cannot reach {where} ({(exc.strerror or str(exc)).lower()})")
    return ToolError(f"web_fetch: {where} did not answer with HTTP ({exc.__class__.__name__})")
