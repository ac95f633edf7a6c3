"""`scribe reflect`: compress a session's memory now (observe, then reflect), from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from scribe.agent import driver

from .exits import EXIT_FAILED, cli_errors, fail, warn
from .visible import visible


def reflect(
    session_id: Annotated[str | None, typer.Argument(help="Session id or any unique part of it. [default: the latest]")] = None,
) -> None:
    """Compress a session's memory now: summarise the older conversation into observations
    (the most recent part stays word for word), then condense the observations. Prints the
    context size before and after."""
    from scribe.agent.config import AgentConfig, SessionChoice
    from scribe.agent.core import Agent
    from scribe.agent.protocol import Compact, Compacted, Compressed, Event, Failed, Notice

    def show(event: Event) -> None:
        if isinstance(event, Compressed):
            print(f"{event.kind}: events {event.seq_from}-{event.seq_to}, "
                  f"{event.tokens_before:,} -> {event.tokens_after:,} tokens")
        elif isinstance(event, Notice):
            print(visible(event.text))
        elif isinstance(event, Failed):
            raise fail(event.text, EXIT_FAILED)
        elif isinstance(event, Compacted):
            print(f"context of {session_id}: raw {event.raw_before:,} + observations {event.observations_before:,} "
                  f"-> raw {event.raw_after:,} + observations {event.observations_after:,} tokens (estimated)")

    with cli_errors():
        choice = SessionChoice(session_id=session_id) if session_id else SessionChoice(continue_latest=True)
        with Agent(AgentConfig(Path.cwd(), choice, turns=False)) as agent:
            for event in agent.start():
                if isinstance(event, Notice):
                    warn(event.text)  # before the session: what an untrusted workspace's files would change
            session_id = agent.session.id
            driver.drive(agent.run(Compact()), show)
