"""`scribe log prompt`: the exact request body of a model call, rebuilt from the log alone."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from scribe.context.render import canonical_json, render
from scribe.log.attachments import ImageStore, StrictImages
from scribe.log.events import AssistantEvent, Event, UnknownEvent, UsageEvent

from ..exits import fail
from .common import SESSION_HELP, load, log_command, resolve_session


def prompt(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    at: Annotated[int | None, typer.Option("--at", min=0, help="The seq of the call's assistant (or usage) "
                                           "event. [default: the request the next call would send]")] = None,
) -> None:
    """Print the request body of a model call as canonical JSON (sorted keys, no spaces): the
    same bytes the API received, rebuilt by rendering the events before that call (and the
    images attached to its messages, from the session's image store)."""
    with log_command():
        found = resolve_session(session)
        events = load(found).events
        cut = len(events) if at is None else _call_index(events, at)
        request = render(events[:cut], images=StrictImages(ImageStore.for_log(found.path)))
        sys.stdout.write(canonical_json(request.body()) + "\n")


def _call_index(events: list[Event], seq: int) -> int:
    """How many events existed when the model call answered by event `seq` was made."""
    index = next((i for i, e in enumerate(events) if e.seq == seq), None)
    if index is None:
        raise fail(f"no event with seq {seq} in this log")
    event = events[index]
    if isinstance(event, UsageEvent):
        if event.purpose != "agent":
            raise fail(f"seq {seq} is a {event.purpose} call; only agent calls can be rebuilt for now "
                       "(observer and reflector requests are not rendered from the log yet)")
        index = _assistant_of(events, index)
        event = events[index]
    if not isinstance(event, AssistantEvent):
        kind = event.type_name if isinstance(event, UnknownEvent) else event.type
        raise fail(f"seq {seq} is a {kind} event, not a model call; give the seq of an assistant or usage event "
                   "(`scribe log show --type assistant` lists them)")
    return index


def _assistant_of(events: list[Event], usage_index: int) -> int:
    index = assistant_of(events, usage_index)
    if index is None:
        raise fail(f"usage event {events[usage_index].seq} follows no assistant event")
    return index


def assistant_of(events: Sequence[Event], usage_index: int) -> int | None:
    """The index of the assistant event a usage event accounts for: same message id, else the
    nearest before; None when no assistant event comes before it. The request of that call is
    `render(events[:index])`."""
    usage = events[usage_index]
    assert isinstance(usage, UsageEvent)
    nearest: int | None = None
    for i in range(usage_index - 1, -1, -1):
        event = events[i]
        if not isinstance(event, AssistantEvent):
            continue
        if nearest is None:
            nearest = i
            if not usage.message_id:
                break
        if usage.message_id and event.message_id == usage.message_id:
            return i
    return nearest
