"""`scribe log prompt`: the exact request body of a model call, rebuilt from the log alone."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from scribe.context.render import canonical_json, render
from scribe.log.attachments import ImageStore, StrictImages
from scribe.log.events import AssistantEvent, Event, UnknownEvent, UsageEvent
from scribe.memory.routes import NotRebuildable, rebuild

from ..exits import fail
from .common import SESSION_HELP, load, log_command, resolve_session


def prompt(
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, show_default=False)] = None,
    at: Annotated[int | None, typer.Option("--at", min=0, help="The seq of the call's assistant (or usage) "
                                           "event; for an observer or reflector call, its usage event. [default: the request the next call would send]")] = None,
) -> None:
    """Print the request body of a model call as canonical JSON (sorted keys, no spaces): the
    same bytes the API received, rebuilt by rendering the events before that call (and the
    images attached to its messages, from the session's image store)."""
    with log_command():
        found = resolve_session(session)
        events = load(found).events
        images = StrictImages(ImageStore.for_log(found.path))
        side = _side_call(events, at) if at is not None else None
        if side is not None:
            index, record = side
            try:
                request = rebuild(events[:index], record, images)
            except NotRebuildable as exc:
                raise fail(f"seq {at}: {exc}") from None
        else:
            cut = len(events) if at is None else _call_index(events, at)
            request = render(events[:cut], images=images)
        sys.stdout.write(canonical_json(request.body()) + "\n")


def _side_call(events: list[Event], seq: int) -> tuple[int, dict[str, Any] | None] | None:
    """(index, recorded request) of the side call whose usage event is `seq`, else None. A
    side call's request is rebuilt from the events before its usage event and what that event
    recorded of how it was built (memory/routes.py)."""
    index = next((i for i, e in enumerate(events) if e.seq == seq), None)
    if index is None:
        return None
    event = events[index]
    if not isinstance(event, UsageEvent) or event.purpose not in ("observer", "reflector"):
        return None
    record = event.extra.get("side_call")
    return index, record if isinstance(record, dict) else None


def _call_index(events: list[Event], seq: int) -> int:
    """How many events existed when the model call answered by event `seq` was made."""
    index = next((i for i, e in enumerate(events) if e.seq == seq), None)
    if index is None:
        raise fail(f"no event with seq {seq} in this log")
    event = events[index]
    if isinstance(event, UsageEvent):
        if event.purpose != "agent":
            raise fail(f"seq {seq} is a {event.purpose} call; agent, observer and reflector calls can be rebuilt")
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
