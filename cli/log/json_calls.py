"""`scribe log stats --json` of a log of a million calls: the document is written as the JSON
encoder makes it, and its list of calls is read again from the log while the encoder walks it,
so no call is held (listing them as objects first held 3.4 GB for a 1 GB log)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scribe.context.stats import CallFigures
from scribe.log.events import UsageEvent
from scribe.log.figures import Pricer
from scribe.log.jsonl import LogRead, stream_log


class CallsOfLog(list[dict[str, Any]]):
    """The first `calls` calls of the log, priced, as `per_call` lists them. A list to the JSON
    encoder (which, with an indent, walks any list by iterating it); empty to nothing else.
    The log only grows: its first `calls` calls are those its figures were made from."""

    def __init__(self, path: Path, price: Pricer, calls: int) -> None:
        super().__init__()
        self.path, self.price, self.calls = path, price, calls

    def __len__(self) -> int:
        return self.calls

    def __iter__(self) -> Iterator[dict[str, Any]]:
        listed = 0
        if not self.calls:
            return
        for event in stream_log(self.path, LogRead()):  # its problems were noted by the first read
            if isinstance(event, UsageEvent):
                cost, uncached = self.price(event)
                yield CallFigures(event.seq, event.purpose, event.model, event.tokens, event.latency_ms, cost,
                                  uncached).as_dict()
                listed += 1
                if listed == self.calls:
                    return


def write_json(value: Any) -> None:
    """What `print_json` writes (the same encoder and indent), chunk by chunk as it is made."""
    for chunk in json.JSONEncoder(ensure_ascii=False, indent=2).iterencode(value):
        sys.stdout.write(chunk)
    sys.stdout.write("\n")
    sys.stdout.flush()
