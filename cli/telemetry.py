"""Telemetry at the edges of a run or a REPL: started after the settings are read (a no-op when
off: nothing of OpenTelemetry is imported), flushed at the end, and what went wrong with the
export said once, in one line, on stderr (telemetry/export.py)."""

from __future__ import annotations

import sys

from scribe.log.figures import Pricer
from scribe.settings.values import Settings
from scribe.telemetry.export import Telemetry, open_telemetry

from .visible import visible


def start_telemetry(settings: Settings, price: Pricer) -> Telemetry:
    return open_telemetry(settings, price)


def end_telemetry(telemetry: Telemetry) -> None:
    for line in telemetry.close():
        print(f"scribe: {visible(line)}", file=sys.stderr)
