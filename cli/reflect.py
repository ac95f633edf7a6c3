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
    from scribe.agent.protocol import Compressed, Notice
    from scribe.agent.runtime import build_agent
    from scribe.agent.session import open_session, store_for
    from scribe.settings.files import find_workspace, trust_of
    from scribe.settings.values import load_settings

    with cli_errors():
        workspace = find_workspace(Path.cwd())
        trust = trust_of(workspace)
        tell_ignored(trust)
        settings = load_settings(workspace, trust=trust)
        store = store_for(workspace)
        found = store.find(session_id, workspace) if session_id else store.to_continue(workspace).found
        session = open_session(found)
        try:
            agent = build_agent(workspace, settings, session)
            assert agent.memory is not None
            before = agent.memory.context(session)
            for event in agent.memory.compress_now(session):
                if isinstance(event, Compressed):
                    print(f"{event.kind}: events {event.seq_from}-{event.seq_to}, "
                          f"{event.tokens_before:,} -> {event.tokens_after:,} tokens")
                elif isinstance(event, Notice):
                    print(visible(event.text))
            after = agent.memory.context(session)
        finally:
            session.close()
        print(f"context of {session.id}: raw {before.raw:,} + observations {before.observations:,} "
              f"-> raw {after.raw:,} + observations {after.observations:,} tokens (estimated)")
