"""Where the session's memory was compressed: each observation and reflection drawn over the
span of events it covers, with a mark where it was made, and whether the prompt still holds it
(a reflection takes the place of the chunks it condenses; `render.active_chunks` says which)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from scribe.context.chunks import active_chunks
from scribe.log.events import Event, ObservationEvent, ReflectionEvent

WIDTH, LEFT, RIGHT = 1000, 90, 20
ROW_H, ROW_GAP = 16, 10


class ChunkSpans(dict[int, tuple[int, int]]):
    """Chunk seq -> (first, last) raw event it stands for; a reflection covers its chunks' spans."""

    def add(self, event: Event) -> tuple[int, int] | None:
        """Note an observation or reflection; its span (None for any other event)."""
        if isinstance(event, ObservationEvent):
            self[event.seq] = (event.seq_from, event.seq_to)
        elif isinstance(event, ReflectionEvent):
            covered = [self[s] for s in event.supersedes if s in self]
            if not covered:
                return None
            self[event.seq] = (min(c[0] for c in covered), max(c[1] for c in covered))
        return self.get(event.seq)


def memory_html(events: Sequence[Event]) -> str:
    chunks = [e for e in events if isinstance(e, ObservationEvent | ReflectionEvent)]
    if not chunks:
        return '<p class="empty">No observations or reflections yet: the whole session is in the prompt raw.</p>'
    covered = ChunkSpans()
    for chunk in chunks:
        covered.add(chunk)
    active = {c.seq for c in active_chunks(events)[0]}
    last = max(events[-1].seq, 1)
    scale = (WIDTH - LEFT - RIGHT) / last
    rows = {"observation": 0, "reflection": 1}
    height = 2 * ROW_H + ROW_GAP + 30
    out = [f'<svg class="memory-map" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
           f'role="group" aria-label="observations and reflections over the events they cover">',
           '<g class="axes" aria-hidden="true">',
           f'<text x="{LEFT - 8}" y="{ROW_H - 3}" text-anchor="end">observations</text>',
           f'<text x="{LEFT - 8}" y="{2 * ROW_H + ROW_GAP - 3}" text-anchor="end">reflections</text>',
           f'<line x1="{LEFT}" y1="{2 * ROW_H + ROW_GAP + 6}" x2="{WIDTH - RIGHT}" y2="{2 * ROW_H + ROW_GAP + 6}"/>',
           f'<text x="{LEFT}" y="{height - 4}">event 0</text>',
           f'<text x="{WIDTH - RIGHT}" y="{height - 4}" text-anchor="end">event {last}</text></g>']
    for chunk in chunks:
        kind = "observation" if isinstance(chunk, ObservationEvent) else "reflection"
        first, end = covered.get(chunk.seq, (chunk.seq, chunk.seq))
        y = rows[kind] * (ROW_H + ROW_GAP)
        x = LEFT + first * scale
        w = max(2.0, (end - first + 1) * scale)
        state = "in the prompt" if chunk.seq in active else "replaced by a later reflection"
        title = f"{kind} made at event {chunk.seq}, covering events {first}-{end}, {chunk.tokens:,} tokens ({state})"
        css = f"chunk {kind}{'' if chunk.seq in active else ' gone'}"
        out.append(f'<a href="#e-{chunk.seq}" class="{css}"><title>{escape(title)}</title>'
                   f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{ROW_H}"/>'
                   f'<path class="made" d="M{LEFT + chunk.seq * scale:.2f} {y + ROW_H} l-4 6 h8 z"/></a>')
    out.append("</svg>")
    items = []
    for chunk in chunks:
        kind = "observation" if isinstance(chunk, ObservationEvent) else "reflection"
        first, end = covered.get(chunk.seq, (chunk.seq, chunk.seq))
        state = "in the prompt" if chunk.seq in active else "replaced"
        items.append(f'<li><a href="#e-{chunk.seq}">{kind} #{chunk.seq}</a>: events {first}–{end}, '
                     f'{chunk.tokens:,} tokens, {escape(state)}</li>')
    return "".join(out) + f'<ul class="chunks">{"".join(items)}</ul>'
