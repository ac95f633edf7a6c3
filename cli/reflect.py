"""`scribe reflect`: compress a session's memory now (observe, then reflect), from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .exits import cli_errors
from .trust import tell_ignored
from .visible import visible


def reflect(
    session_id: Annotated[str | None, typer.Argument(help="Session id or any unique part of it. [default: the latest]")] = None,
) -> None:
    """Compress a session's memory now: summarise the older conversation into observations
    (the most recent part stays word for word), then condense the observations. Prints the
    context size before and after."""
    from scribe.agent.assembly import Opening, SessionChoice, open_agent
    from scribe.agent.protocol import Compressed, Notice

    with cli_errors():
        choice = SessionChoice(session_id=session_id) if session_id else SessionChoice(continue_latest=True)
        with open_agent(Opening(Path.cwd(), choice, turns=False), on_trust=tell_ignored) as opened:
            memory, session = opened.agent.memory, opened.session
            assert memory is not None
            before = memory.context(session)
            for event in memory.compress_now(session):
                if isinstance(event, Compressed):
                    print(f"{event.kind}: events {event.seq_from}-{event.seq_to}, "
                          f"{event.tokens_before:,} -> {event.tokens_after:,} tokens")
                elif isinstance(event, Notice):
                    print(visible(event.text))
            after = memory.context(session)
        print(f"context of {session.id}: raw {before.raw:,} + observations {before.observations:,} "
              f"-> raw {after.raw:,} + observations {after.observations:,} tokens (estimated)")
