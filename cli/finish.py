"""The finishing process: `python -I -m scribe.cli.finish`, started by a run as it ends
(agent/finishing/handover.py) with what its session left on stdin. It has no terminal: what it
did is in the logs, and what it could not do is one line in `.scribe/finishing.err`."""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType

from scribe.agent.finishing.finisher import EXPECTED, finish
from scribe.agent.finishing.handover import Handover


def _stopped(signum: int, frame: FrameType | None) -> None:
    # A run that continues the session takes it back (handover.take_back): the work in hand
    # stops as Ctrl-C stops it, recording what it left.
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


def main() -> int:
    signal.signal(signal.SIGTERM, _stopped)
    handover = Handover.from_json(sys.stdin.read())
    try:
        finish(handover)
    except KeyboardInterrupt:
        return 0  # what was left is handed on again when the run that took the session ends
    except EXPECTED as exc:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} session {handover.session_id}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
