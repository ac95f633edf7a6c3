"""The one driver: a front end runs whatever the agent yields (a turn, a session starting or
ending) through `drive`, with its own `show`; the agent never prints.

A Ctrl-C lands wherever the main thread is. Inside the agent's generator, the generator handles
it (a turn records an interrupt, a skippable wait is skipped). While the front end shows an
event, outside the generator, `drive` throws it in where the generator yielded that event, so it
is handled there the same way. One the generator does not handle propagates from `drive`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TypeVar

Event = TypeVar("Event")
Result = TypeVar("Result")


def drive(events: Generator[Event, None, Result], show: Callable[[Event], None]) -> Result:
    """Run `events` to its end, showing each; what it returns."""
    landed: KeyboardInterrupt | None = None
    try:
        while True:
            try:
                event = events.throw(landed) if landed is not None else next(events)
            except StopIteration as end:
                return end.value
            landed = None
            try:
                show(event)
            except KeyboardInterrupt as interrupt:
                landed = interrupt
    finally:
        events.close()  # runs the generator's `finally` (a log's fsync) now, not at garbage collection
