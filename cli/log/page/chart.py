"""The model calls drawn as inline SVG: one stacked bar per call in tokens (cache read, cache
write, uncached input, output) and, below it, the same call in dollars with the session's
running cost; then each call's cache hit rate, and a strip telling the agent's calls from the
side calls (observer, reflector, curator), whose bars are also drawn lighter.

Figures are `scribe log stats`'s, call by call (memory/stats.CallFigures); dollars split by kind
come from the same list prices (agent/pricing.cost_parts), so the parts add up to the call's cost.

A long session has thousands of calls, so each kind of segment is one path holding a rectangle
per call, not an element per bar: the page stays light and opens fast. The chart is one control:
the page's script maps a click or the arrow keys to a call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from scribe.context.stats import PURPOSES, CallFigures
from scribe.log.pricing import LIST_PRICES, PriceBook

from ..common import UNPRICED, money

PARTS = ("cache_read", "cache_write", "input", "output")  # bottom to top
PART_CSS = {"cache_read": "cr", "cache_write": "cw", "input": "in", "output": "out"}

LEFT, RIGHT, TOP = 64, 64, 14
TOKENS_H, DOLLARS_H, HIT_H, STRIP_H, GAP_H = 150, 90, 36, 6, 18
FIT_WIDTH = 1000  # bars shrink to fit this width, down to MIN_BAR px; past that the chart scrolls
MIN_BAR, MAX_BAR = 2.0, 28.0


@dataclass(frozen=True)
class Layout:
    n: int
    bar: float
    step: float
    tokens_per_px: float
    dollars_per_px: float
    running_per_px: float

    def x(self, i: int) -> float:
        return LEFT + i * self.step

    @property
    def width(self) -> float:
        return LEFT + self.n * self.step + RIGHT

    @property
    def dollars_top(self) -> int:
        return TOP + TOKENS_H + GAP_H

    @property
    def hit_top(self) -> int:
        return self.dollars_top + DOLLARS_H + GAP_H

    @property
    def strip_top(self) -> int:
        return self.hit_top + HIT_H + 6

    @property
    def height(self) -> int:
        return self.strip_top + STRIP_H + 18


def part_dollars(call: CallFigures, prices: PriceBook = LIST_PRICES) -> dict[str, float]:
    # Priced together: a model with a long-prompt band prices every part at the call's band. An
    # unpriced call has no dollar bar.
    t = call.tokens
    parts = None if call.cost_usd is None else prices.cost_parts(call.model, input=t.input, cache_read=t.cache_read,
                                                                 cache_write=t.cache_write, output=t.output)
    return parts if parts is not None else dict.fromkeys(PARTS, 0.0)


def layout_of(calls: Sequence[CallFigures]) -> Layout:
    n = len(calls)
    step = max(MIN_BAR * 1.25, min(MAX_BAR * 1.25, FIT_WIDTH / n))
    tallest = max(c.tokens.prompt_tokens + c.tokens.output for c in calls) or 1
    dearest = max(c.cost_usd or 0.0 for c in calls) or 1.0
    total = sum(c.cost_usd or 0.0 for c in calls) or 1.0
    return Layout(n, round(step * 0.8, 2), round(step, 2), tallest / TOKENS_H, dearest / DOLLARS_H, total / DOLLARS_H)


def _n(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") or "0"


def calls_svg(calls: Sequence[CallFigures], prices: PriceBook = LIST_PRICES) -> str:
    if not calls:
        return '<p class="empty">No model calls yet.</p>'
    layout = layout_of(calls)
    paths: dict[str, list[str]] = defaultdict(list)
    running_points = [f"{LEFT},{layout.dollars_top + DOLLARS_H}"]
    running = 0.0
    w = _n(layout.bar)
    for i, call in enumerate(calls):
        x = _n(layout.x(i))
        side = "agent" if call.purpose == "agent" else "side"
        for kind, bottom, heights in (
                ("tk", TOP + TOKENS_H, [getattr(call.tokens, p) / layout.tokens_per_px for p in PARTS]),
                ("usd", layout.dollars_top + DOLLARS_H, [d / layout.dollars_per_px for d in part_dollars(call, prices).values()])):
            y = float(bottom)
            for part, h in zip(PARTS, heights, strict=True):
                if h > 0:
                    y -= h
                    paths[f"{kind} {PART_CSS[part]} {side}"].append(f"M{x} {y:.2f}h{w}v{h:.2f}h-{w}z")
        hit = call.tokens.hit_rate
        paths["rate"].append(f"M{_n(layout.x(i) + layout.bar / 2)} {layout.hit_top + HIT_H * (1 - hit):.2f}h0")
        purpose = call.purpose if call.purpose in PURPOSES else "other"
        paths[f"strip p-{purpose}"].append(f"M{x} {layout.strip_top}h{w}v{STRIP_H}h-{w}z")
        running += call.cost_usd or 0.0
        running_points.append(f"{_n(layout.x(i) + layout.bar)},{layout.dollars_top + DOLLARS_H - running / layout.running_per_px:.2f}")

    dot = _n(min(5.0, max(2.0, layout.bar * 0.6)))
    first = calls[0]
    out = [f'<svg class="calls" id="calls-chart" width="{_n(layout.width)}" height="{layout.height}" '
           f'viewBox="0 0 {_n(layout.width)} {layout.height}" tabindex="0" role="slider" '
           f'aria-label="model calls: the arrow keys choose one, Home and End the first and last" '
           f'aria-valuemin="1" aria-valuemax="{len(calls)}" aria-valuenow="1" '
           f'aria-valuetext="call 1, {escape(first.purpose, quote=True)}, seq {first.seq}" '
           f'data-left="{LEFT}" data-step="{_n(layout.step)}" data-bar="{w}" '
           f'data-tokens-per-px="{layout.tokens_per_px!r}" data-dollars-per-px="{layout.dollars_per_px!r}">']
    out.append(_axes(layout, calls))
    out.append(f'<rect class="selected" id="chart-selected" x="{LEFT - 1}" y="{TOP - 4}" width="{_n(layout.bar + 2)}" '
               f'height="{layout.strip_top + STRIP_H - TOP + 8}"/>')
    for key, segments in paths.items():
        width = f' stroke-width="{dot}"' if key == "rate" else ""
        out.append(f'<path class="{key}"{width} d="{"".join(segments)}"/>')
    out.append(f'<polyline class="running" points="{" ".join(running_points)}"/>')
    out.append("</svg>")
    return "".join(out)


def _axes(layout: Layout, calls: Sequence[CallFigures]) -> str:
    right = _n(layout.width - RIGHT)
    tokens_bottom, dollars_bottom = TOP + TOKENS_H, layout.dollars_top + DOLLARS_H
    hit_top, hit_bottom = layout.hit_top, layout.hit_top + HIT_H
    tallest = round(layout.tokens_per_px * TOKENS_H)
    priced = any(c.cost_usd is not None for c in calls)
    label_x = LEFT - 8

    def label(y: float, text: str, css: str = "", x: float = label_x, anchor: str = "end") -> str:
        cls = f' class="{css}"' if css else ""
        return f'<text{cls} x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}">{escape(text)}</text>'

    def line(y: float, css: str = "") -> str:
        cls = f' class="{css}"' if css else ""
        return f'<line{cls} x1="{LEFT - 4}" y1="{y}" x2="{right}" y2="{y}"/>'

    return ('<g class="axes" aria-hidden="true">'
            + line(tokens_bottom) + line(dollars_bottom) + line(hit_bottom) + line(hit_top, "faint")
            + label(TOP + 4, f"{tallest:,}") + label(tokens_bottom, "0") + label(TOP + TOKENS_H / 2, "tokens")
            + label(layout.dollars_top + 4, money(layout.dollars_per_px * DOLLARS_H) if priced else UNPRICED)
            + label(layout.dollars_top + DOLLARS_H / 2, "per call")
            + label(layout.dollars_top + 4, money(sum(c.cost_usd or 0.0 for c in calls)) if priced else UNPRICED, "run",
                    layout.width - RIGHT + 6, "start")
            + label(layout.dollars_top + DOLLARS_H / 2, "running", "run", layout.width - RIGHT + 6, "start")
            + label(hit_top + 4, "100%") + label(hit_bottom, "hit rate")
            + label(layout.strip_top + STRIP_H, "purpose")
            + "</g>")


LEGEND = (
    '<ul class="legend" aria-label="legend">'
    '<li><span class="swatch cr"></span>cache read</li><li><span class="swatch cw"></span>cache write</li>'
    '<li><span class="swatch in"></span>uncached input</li><li><span class="swatch out"></span>output</li>'
    '<li><span class="swatch line"></span>running cost</li><li><span class="swatch dot"></span>cache hit rate</li>'
    '<li><span class="swatch p-agent"></span>agent</li><li><span class="swatch p-observer"></span>observer</li>'
    '<li><span class="swatch p-reflector"></span>reflector</li><li><span class="swatch p-curator"></span>curator</li>'
    '<li>side calls are drawn lighter</li></ul>')
