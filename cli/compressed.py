"""The one line that tells a person a compression happened, and what it folded: the REPL, `scribe
run` (on stderr) and `scribe reflect` say it after each one. Compressing keeps every event in
the log, but the prompt loses their words: the line says which events went into which chunk, how
many tokens they were and are, and where to see them beside what replaced them."""

from __future__ import annotations

from scribe.agent.protocol import Compressed
from scribe.tools.textio import plural

# Where the person reads each compression beside the events it replaced.
SEE = "`scribe log show --compressions`"


def compressed_line(event: Compressed) -> str:
    """`memory: folded events 12-87 (64 events, ~31,204 tokens) into observation 88 (~1,840 tokens); …`:
    the tokens are what the prompt held of them, estimated as the bottom bar's context is."""
    how = " without a model" if event.model_free else ""
    if event.kind == "observation":
        what = f"events {event.seq_from}-{event.seq_to} ({plural(event.folded, 'event')}"
    else:
        what = f"chunks {event.seq_from}-{event.seq_to} ({plural(event.folded, 'chunk')}"
    return (f"memory: folded {what}, ~{event.tokens_before:,} tokens) into {event.kind} {event.seq}{how} "
            f"(~{event.tokens_after:,} tokens); {SEE} shows them beside it")
