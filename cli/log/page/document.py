"""The session page: one self-contained HTML document built from a session's events.

A pure function of the log (`session_page`), also kept as an object that takes events as they
are appended (`SessionPage`), so that `scribe log serve` does only the new work when a live
session grows. Inline CSS, inline SVG, one inline script, and the data the script needs as JSON;
a Content-Security-Policy lets that one script run and nothing else, and lets the page load
nothing from anywhere (when served, it may ask its own server what the log added).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Sequence
from functools import cache
from html import escape
from importlib.resources import files
from typing import Any

from scribe.context.stats import SessionStats, session_stats
from scribe.log.attachments import ImageStore
from scribe.log.events import Event, SessionEvent, UsageEvent
from scribe.log.pricing import LIST_PRICES, PriceBook

from ..common import local_time
from ..prompt import assistant_of
from .chart import LEGEND, calls_svg
from .figures import figures_html, headline
from .memory_map import memory_html
from .prompts import BlockStore, PromptTrack
from .text import inline, patterns
from .thumbnails import Thumbnails
from .timeline import Timeline

POLL_MS = 500  # how often a served page asks what the log added


@cache
def asset(name: str) -> str:
    return (files("scribe.cli.log.page") / name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """JSON that can stand inside a <script> element: no `<`, `>` or `&` that could close it or
    open a comment, and no line separators that older parsers end a string at."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _csp(script: str, live: bool) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    connect = "'self'" if live else "'none'"
    # img-src data: the thumbnails of attached images, inline; nothing is fetched.
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            f"connect-src {connect}; base-uri 'none'; form-action 'none'")


class SessionPage:
    """The page of one session, fed its events in log order."""

    def __init__(self, session_id: str, prices: PriceBook = LIST_PRICES, left_out: int = 0,
                 images: ImageStore | None = None) -> None:
        self.session_id = session_id
        self.prices = prices
        self.left_out = left_out
        self.events: list[Event] = []
        self.timeline = Timeline(prices, Thumbnails(images))
        self.store = BlockStore()
        self.prompts = PromptTrack(self.store)

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.events.append(event)
            self.timeline.add(event)
            if isinstance(event, UsageEvent) and event.purpose == "agent" and isinstance(self.events[0], SessionEvent):
                answered = assistant_of(self.events, len(self.events) - 1)
                if answered is not None:
                    self.prompts.add(self.events, answered, event)

    @property
    def version(self) -> str:
        """Changes whenever an event is added: what a live page compares."""
        return str(len(self.events))

    def data(self, stats: SessionStats, live: bool) -> dict[str, Any]:
        return {"version": self.version, "live": live, "poll_ms": POLL_MS, "marks": patterns(),
                **self._data_since(stats, 0, 0)}

    def _data_since(self, stats: SessionStats, calls_seen: int, blocks_seen: int) -> dict[str, Any]:
        """The calls after the first `calls_seen`, their prompts, and the blocks after the first
        `blocks_seen`: all a page holding the rest needs (calls and blocks are only ever added)."""
        running: float | None = 0.0  # None once an unpriced call is among them
        calls: list[list[Any]] = []
        prompts: dict[int, dict[str, Any]] = {}
        previous: Sequence[int] = ()
        for i, c in enumerate(stats.calls):
            running = None if running is None or c.cost_usd is None else running + c.cost_usd
            if i >= calls_seen:
                calls.append([c.seq, c.purpose, c.model, *c.tokens.counts().values(),
                              c.latency_ms, *(None if v is None else round(v, 8)
                                              for v in (c.cost_usd, c.uncached_cost_usd, running))])
            call = self.prompts.calls.get(c.seq)
            if call is None:
                continue
            if i >= calls_seen:
                keep = 0
                while keep < min(len(previous), len(call.blocks)) and previous[keep] == call.blocks[keep]:
                    keep += 1
                # each prompt as the references it adds to the previous agent call's prompt
                prompts[c.seq] = {"p": [keep, *call.blocks[keep:]], "t": call.tools, "s": call.system,
                                  "bp": list(call.breakpoints), "c": call.cached, "d": call.differs_at,
                                  "w": call.was, "r": call.reason, "at": call.at}
            previous = call.blocks
        return {"calls": calls, "prompts": prompts, "blocks": self.store.texts[blocks_seen:]}

    def sections(self, stats: SessionStats, live: bool) -> dict[str, str]:
        """The parts of the page that change as the log grows, by element id (the timeline's turns apart)."""
        head = self.events[0] if self.events and isinstance(self.events[0], SessionEvent) else None
        facts: list[str] = []
        if head is not None:
            facts += [head.model, head.cwd]
            if head.git_head:
                facts.append(f"{head.git_branch or '?'} @ {head.git_head[:10]}")
            facts += [f"started {local_time(head.created)}", f"scribe {head.scribe_version}"]
        facts.append(f"{len(self.events):,} events")
        if self.left_out:
            facts.append(f"{self.left_out:,} earlier events left out")
        live_badge = (f'<p class="live" id="live" role="status">following the log: it updates as events are '
                      f'appended ({len(self.events):,} events)</p>' if live else "")
        return {
            "head": (f'<header id="head"><h1>Session <code>{escape(self.session_id)}</code></h1>'
                     f'<p class="facts">{" · ".join(inline(f) for f in facts)}</p>{live_badge}'
                     f'{self._left_out_note()}</header>'),
            "figures-body": f'<div id="figures-body">{headline(stats)}{figures_html(stats)}</div>',
            "chart-box": (f'<div class="scroll chart" id="chart-box">{calls_svg(stats.calls, self.prices)}'
                          f'<div class="tip" id="chart-tip" hidden></div></div>'),
            "memory-body": f'<div id="memory-body">{memory_html(self.events)}</div>',
        }

    def _left_out_note(self) -> str:
        if not self.left_out:
            return ""
        first = next((e.seq for e in self.events[1:]), None)
        return (f'<p class="left-out" role="note">This session is long: the page shows its session event and its '
                f'last {len(self.events) - 1:,} events (from seq {first}); the {self.left_out:,} events before '
                'them are left out, and the figures, calls and prompts here are those of the events shown. '
                '<code>scribe log stats</code> has the whole session\'s figures, <code>scribe log show</code> '
                'every event.</p>')

    def update(self, events_seen: int, calls_seen: int, blocks_seen: int) -> dict[str, Any]:
        """What a live page that has seen `events_seen` events (and so many calls and blocks)
        needs to show the log as it is now: the changed sections and turns, and the new data."""
        if events_seen == len(self.events):
            return {"version": self.version}
        stats = session_stats(self.events, self.prices.price_usage)
        return {"version": self.version, "sections": self.sections(stats, True),
                "turns": self.timeline.changed_since(events_seen),
                **self._data_since(stats, calls_seen, blocks_seen)}

    def html(self, *, live: bool = False) -> str:
        stats = session_stats(self.events, self.prices.price_usage)
        script = asset("page.js")
        parts = self.sections(stats, live)
        title = f"scribe · session {self.session_id}"
        body = (
            f'<a class="skip" href="#timeline">Skip to the timeline</a>{parts["head"]}<main>'
            f'<section aria-labelledby="h-figures"><h2 id="h-figures">Figures</h2>{parts["figures-body"]}</section>'
            f'<section aria-labelledby="h-calls"><h2 id="h-calls">Model calls</h2>'
            f'<p class="dim">One bar per call, in tokens (top) and dollars (below, with the running cost of the '
            f'session), then its cache hit rate and who made it. Choose a bar (click it, or Tab to the chart and '
            f'use the arrow keys) to see the call and the prompt it was sent.</p>{LEGEND}{parts["chart-box"]}'
            f'<section id="call" aria-live="polite" aria-label="the chosen call"><noscript>The call details need '
            f'JavaScript.</noscript></section></section>'
            f'<section aria-labelledby="h-memory"><h2 id="h-memory">Memory</h2>{parts["memory-body"]}</section>'
            f'<section aria-labelledby="timeline"><h2 id="timeline" tabindex="-1">Timeline</h2>'
            f'<div class="toolbar"><button type="button" data-all="results:open">open all outputs</button>'
            f'<button type="button" data-all="results:close">close all outputs</button>'
            f'<button type="button" data-all="turns:close">fold all turns</button>'
            f'<button type="button" data-all="turns:open">unfold all turns</button></div>'
            f'<div id="turns">{self.timeline.html() or "<p class=empty>No events yet.</p>"}</div></section></main>'
            f'<script type="application/json" id="scribe-data">{script_json(self.data(stats, live))}</script>'
            f"<script>{script}</script>")
        return ('<!doctype html><html lang="en"><head><meta charset="utf-8">'
                '<meta name="viewport" content="width=device-width, initial-scale=1">'
                f'<meta http-equiv="Content-Security-Policy" content="{escape(_csp(script, live), quote=True)}">'
                f'<meta name="referrer" content="no-referrer"><title>{escape(title)}</title>'
                f'<style>{asset("page.css")}</style></head><body>{body}</body></html>')


def session_page(session_id: str, events: Iterable[Event], *, live: bool = False, left_out: int = 0,
                 prices: PriceBook = LIST_PRICES, images: ImageStore | None = None) -> str:
    """The page of `events`; `left_out`: how many events of the log, after its session event and
    before the rest, the caller passed over (the page says so); `images`: the session's image
    store, for the thumbnails."""
    page = SessionPage(session_id, prices, left_out, images)
    page.extend(events)
    return page.html(live=live)
