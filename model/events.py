"""What one model call tells the front ends as it runs: its text as it arrives, a text withdrawn
by a retry that answered differently, a retry, a silent server, and a notice worth a line. The
agent passes them on among its own events (agent/protocol.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class TextDelta:
    """More of the answer, continuing what was shown of this model call so far."""

    text: str


@dataclass(frozen=True)
class TextWithdrawn:
    """The retried call's answer differs from the text already shown for this call: `text` is
    not part of the answer, which starts again with the next TextDelta. (While a retried call
    repeats what was shown, nothing is sent; only text past it arrives as TextDelta.)"""

    text: str


@dataclass(frozen=True)
class Retrying:
    """The call failed and is tried again whole; the text shown so far stays (see TextWithdrawn)."""

    attempt: int
    reason: str


# What a silent server is doing, as far as the stream tells: no answer to the request yet (still
# connecting, or queued); answered (its 200) but no event yet, as a local server is while it
# evaluates a long prompt; or paused in the middle of its answer.
Stage = Literal["connecting", "reading", "answering"]


@dataclass(frozen=True)
class Waiting:
    """The server has sent nothing for `silent_s` seconds, at `stage`. The call gives up after
    `timeout_s` seconds of silence (`request_timeout_s`). Sent once per silent spell, as soon as
    it is noticeable, so a front end can say at once what it waits for."""

    attempt: int
    server: str  # host[:port]
    silent_s: float
    timeout_s: float
    stage: Stage

    @property
    def answering(self) -> bool:
        """Paused mid-answer (else the answer has not begun)."""
        return self.stage == "answering"

    @property
    def what(self) -> str:
        """What is waited for, without the figures: a spinner counts the seconds itself."""
        if self.stage == "reading":
            return f"{self.server} is reading the prompt before it answers"
        return f"the answer paused from {self.server}" if self.answering else f"no answer yet from {self.server}"

    @property
    def reason(self) -> str:
        return f"{self.what} after {self.silent_s:g} s; giving up after {self.timeout_s:g} s of silence"


@dataclass(frozen=True)
class Notice:
    """Something worth a line to the person that is not part of the conversation. `routine`:
    bookkeeping that went as it should or mends itself, which a front end may leave unsaid."""

    text: str
    routine: bool = False
