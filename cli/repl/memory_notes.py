"""Which memory events a REPL turn shows. Compression runs on its own, often every few turns in
a long session, and a line each time is noise: the bottom bar already shows the context size,
and `/stats` what memory did. So the first compression of a REPL run is said once, with what it
means, and later ones only by the bar; a routine notice (an answer cut but kept, a backoff that
mends itself) is left unsaid; a problem the person may act on (an observer model that fails,
calls that keep being refused) is shown. `/reflect` shows everything: it was asked for."""

from __future__ import annotations

from dataclasses import dataclass

from scribe.agent.protocol import AgentEvent, Compressed, Notice

from .view import compressed_line

FIRST = ("  (memory compression: older turns are now kept as short notes, so the prompt stays small; "
         "later compressions show only in the bottom bar, /stats tells what memory did)")


@dataclass
class MemoryNotes:
    announced: bool = False

    def shown(self, event: AgentEvent) -> AgentEvent | None:
        """The event to show for `event`, or None to show nothing."""
        if isinstance(event, Notice) and event.routine:
            return None
        if isinstance(event, Compressed):
            if self.announced:
                return None
            self.announced = True
            return Notice(compressed_line(event) + "\n" + FIRST)
        return event
