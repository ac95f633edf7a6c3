"""The model's context window: how many tokens one request may hold, and the limits that follow.

Where it comes from, strongest first:
  - `context_tokens` in the config (a refused request's own words still win when they name a
    smaller window: the server is the judge of what fits);
  - what the session has learned and recorded in its log (a `context_window` event): the
    server's own report, asked once at session start of a base URL that is not Anthropic's
    (llama.cpp answers GET /props with `default_generation_settings.n_ctx`), or the numbers of a
    request refused for its size;
  - the table of Claude models (`WINDOWS`), beside the price table.
Unknown: the configured thresholds are used as they are.

From the window the compressor takes its thresholds when the configured ones do not fit
(`limits`), as shares of what is left once the request's fixed prefix (instructions and tools)
and room for the answer are taken out:
  - observe when the raw tail passes half of it (OBSERVE_SHARE): observing leaves the retention
    floor raw, and one more call's growth (an answer, a tool output) still fits behind it;
  - reflect when the observations pass a quarter (REFLECT_SHARE): at both thresholds at once
    the prompt is three quarters full, so a threshold is always crossed, and compression runs,
    before the window is reached;
  - a side call (observer, reflector, curator) holds at most 60% of the window (SIDE_CALL_SHARE):
    the rest is for its instructions' estimate error and its answer.
The room kept for the answer is the request's `max_tokens`, at most an eighth of the window (a
small local model's answer is short; Anthropic counts `max_tokens` against the window).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from scribe.settings.values import anthropic_url  # noqa: F401 - where the callers here find it

# Every current Claude model reads 200,000 tokens (1M-token betas are opt-in headers scribe does
# not send). Matched by the longest prefix, as the price table is.
WINDOWS: dict[str, int] = {"claude-": 200_000}
OBSERVE_SHARE = 0.5
REFLECT_SHARE = 0.25
SIDE_CALL_SHARE = 0.6
ANSWER_SHARE = 0.125
MIN_THRESHOLD = 64  # below this an observation could not even hold its own framing
PROBE_TIMEOUT_S = 2.0

SOURCES = {"config": "context_tokens in the config", "error": "a request the server refused for its size",
           "server": "the server's own report", "table": "scribe's table of Claude models"}


@dataclass(frozen=True)
class ContextWindow:
    tokens: int
    source: str  # config | error | server | table (SOURCES)

    def describe(self) -> str:
        return f"{self.tokens:,} tokens (from {SOURCES.get(self.source, self.source)})"


def table_window(model: str) -> int | None:
    matches = [k for k in WINDOWS if model.startswith(k)]
    return WINDOWS[max(matches, key=len)] if matches else None


def effective_window(model: str, configured: int, recorded: ContextWindow | None,
                     recorded_model: str | None = None) -> ContextWindow | None:
    """The window in force for `model`: see the module docstring for the order. A recorded
    window was learned from the server, so it holds after a model switch too, unless the table
    knows the new model (a switch between Claude models on Anthropic's API)."""
    if recorded is not None and recorded_model not in (None, model) and table_window(model) is not None:
        recorded = None
    if configured > 0:
        if recorded is not None and recorded.source == "error" and recorded.tokens < configured:
            return recorded
        return ContextWindow(configured, "config")
    if recorded is not None:
        return recorded
    known = table_window(model)
    return ContextWindow(known, "table") if known is not None else None


# -- what a refused request says --------------------------------------------------------------

@dataclass(frozen=True)
class Overflow:
    """A request refused for its size: how many tokens it held (when said) and the window."""

    requested: int | None
    window: int


_OVERFLOW = (
    # llama.cpp: "request (5413 tokens) exceeds the available context size (4096 tokens), try increasing it"
    re.compile(r"request \((?P<requested>\d+) tokens\) exceeds the available context size \((?P<window>\d+) tokens\)"),
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    re.compile(r"prompt is too long: (?P<requested>\d+) tokens > (?P<window>\d+) maximum"),
    # Anthropic, with the answer's room: "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000"
    re.compile(r"input length and `?max_tokens`? exceed context limit: (?P<requested>\d+) \+ \d+ > (?P<window>\d+)"),
)


def read_overflow(message: str) -> Overflow | None:
    """The numbers of an error that refuses a request for its size, None for any other error."""
    for pattern in _OVERFLOW:
        found = pattern.search(message)
        if found is not None:
            return Overflow(int(found["requested"]), int(found["window"]))
    return None


# -- what a server reports ---------------------------------------------------------------------

def props_urls(base_url: str) -> list[str]:
    """Where a llama.cpp server answers /props: beside the Messages path the SDK uses (the base
    URL may end in a path, as a proxy's does), then at the host's root."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    urls = [urlunsplit((parts.scheme, parts.netloc, f"{path}/props", "", ""))]
    if path:
        urls.append(urlunsplit((parts.scheme, parts.netloc, "/props", "", "")))
    return urls


@dataclass(frozen=True)
class ServerReport:
    """What a server says of itself at /props (llama.cpp): its context window per slot, and
    whether its model's chat template takes tools (`chat_template_caps.supports_tools`; a
    template without them makes the server drop the request's `tools`). None: not said."""

    window: int | None
    tools: bool | None


def read_props(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> ServerReport | None:
    """The server's report of itself, None when it gives none (not llama.cpp, not answering,
    not within `timeout_s`). Never raises: a server that says nothing is common."""
    # Imported here: Anthropic's API is never asked, and a session there need not load it.
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    for url in props_urls(base_url):
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as answer:  # noqa: S310 - http(s) checked upstream
                body = json.loads(answer.read(1_000_000))
        except urllib.error.HTTPError:
            continue  # a 404 at the first place may still be found at the root
        except (OSError, ValueError):
            return None  # refused, silent or not JSON: the server is not answering this
        if not isinstance(body, dict):
            continue
        settings, caps = body.get("default_generation_settings"), body.get("chat_template_caps")
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        tools = caps.get("supports_tools") if isinstance(caps, dict) else None
        window = n_ctx if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and n_ctx > 0 else None
        if window is not None or isinstance(tools, bool):
            return ServerReport(window, tools if isinstance(tools, bool) else None)
    return None


def ask_server(base_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> int | None:
    """The context window a server reports of itself (`read_props`), None when it reports none."""
    report = read_props(base_url, timeout_s)
    return report.window if report is not None else None


# -- what follows from it ----------------------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """The thresholds the compressor uses, in (calibrated) tokens."""

    observe: int  # the raw tail passes this: observe
    reflect: int  # the observations pass this: reflect
    side_call: int  # the most one observer, reflector or curator request may hold
    prompt: int | None  # the most one agent request may hold (None: window unknown)


def limits(window: ContextWindow | None, *, observe: int, reflect: int, side_call: int, max_tokens: int,
           fixed: int) -> Limits:
    """The configured thresholds, lowered to shares of `window` where they do not fit in it;
    `fixed` is the request's fixed prefix (instructions and tools) in calibrated tokens."""
    if window is None:
        return Limits(observe, reflect, side_call, None)
    prompt = window.tokens - answer_room(window.tokens, max_tokens)
    usable = max(prompt - fixed, prompt // 4)  # a prefix that fills the window leaves nothing to plan
    return Limits(observe=min(observe, max(MIN_THRESHOLD, int(usable * OBSERVE_SHARE))),
                  reflect=min(reflect, max(MIN_THRESHOLD, int(usable * REFLECT_SHARE))),
                  side_call=side_call_limit(side_call, window),
                  prompt=prompt)


def side_call_limit(configured: int, window: ContextWindow | None) -> int:
    """`side_call_tokens`, lowered to a share of the window where it does not fit."""
    return configured if window is None else min(configured, int(window.tokens * SIDE_CALL_SHARE))


def answer_room(window: int, max_tokens: int) -> int:
    return min(max_tokens, int(window * ANSWER_SHARE))
