"""Which memory events a REPL turn shows. Every compression is said in one line, what it folded
(cli/compressed.py): the prompt lost those events' words, and the person should know which and
where to read them. The first of a REPL run adds what compression means; a routine notice (an
answer cut but kept, a backoff that mends itself) is left unsaid; a problem the person may act
on (an observer model that fails, calls that keep being refused) is shown. `/reflect` shows
everything: it was asked for."""

from __future__ import annotations

from dataclasses import dataclass

from scribe.agent.protocol import AgentEvent, Compressed, Notice

from ..compressed import compressed_line

FIRST = ("  (memory compression: older turns are now kept as short notes, so the prompt stays small; the log "
         "keeps every event, and /stats tells what memory did)")


@dataclass
class MemoryNotes:
    announced: bool = False

    def shown(self, event: AgentEvent) -> AgentEvent | None:
        """The event to show for `event`, or None to show nothing."""
        if isinstance(event, Notice) and event.routine:
            return None
        if isinstance(event, Compressed):
            if self.announced:
                return event
            self.announced = True
            return Notice(compressed_line(event) + "\n" + FIRST)
        return event
