"""Where the session's memory was compressed: each observation and reflection drawn over the
span of events it covers, with a mark where it was made, and whether the prompt still holds it
(a reflection takes the place of the chunks it condenses; `render.active_chunks` says which);
then each compression with what it says beside the events it replaced."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from scribe.context.compressions import Folded, compressions
from scribe.log.chunks import active_chunks
from scribe.log.events import Event, ObservationEvent, ReflectionEvent

from ..compressions import heading, recall_pointer, stretch_heading, taught
from ..format import EventPrinter
from .text import inline, marked

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
    folded = "".join(compression_html(f, f.chunk.seq in active, printer)
                     for printer in [EventPrinter(None)] for f in compressions(taught(printer, events)))
    return "".join(out) + f'<div class="compressions">{folded}</div>'


def compression_html(folded: Folded, in_prompt: bool, printer: EventPrinter) -> str:
    """One compression: its heading (the words of `scribe log show --compressions`), then what
    its chunk says beside the events it replaced, each run of them with the `recall` call that
    reads it back. Folded shut, its heading saying what it did: a long session makes hundreds."""
    seq = folded.chunk.seq
    state = "in the prompt" if in_prompt else "replaced by a later reflection"
    where = f' · <code>{inline(recall_pointer(*folded.covers))}</code>' if folded.covers else ""
    runs = []
    for stretch in folded.stretches():
        items = "".join(f'<li><a class="seq" href="#e-{e.seq}">#{e.seq}</a> {inline(printer.gist(e))}</li>'
                        for e in stretch.events)
        runs.append(f'<li><div class="recall">{inline(stretch_heading(folded, stretch))}</div><ul>{items}</ul></li>')
    replaced = (f'<ol class="stretches">{"".join(runs)}</ol>' if runs
                else '<p class="empty">None of its events are on this page.</p>')
    return (f'<details class="compression {folded.kind}" id="c-{seq}"><summary><a href="#e-{seq}">{folded.kind} '
            f'#{seq}</a>: {inline(heading(folded))} · {escape(state)}</summary><div class="folded">'
            f'<div class="said"><h3>what it says</h3><pre>{marked(folded.chunk.text)}</pre></div>'
            f'<div class="replaced"><h3>what it replaced{where}</h3>{replaced}</div></div></details>')

