"""What one model call tells the front ends as it runs: its text as it arrives, a text withdrawn
by a retry that answered differently, a retry, a silent server, and a notice worth a line. The
agent passes them on among its own events (agent/protocol.py)."""

from __future__ import annotations

from dataclasses import dataclass


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


@dataclass(frozen=True)
class Waiting:
    """The server has sent nothing for `silent_s` seconds: still connecting or thinking
    (`answering` False), or paused mid-answer. The call gives up after `timeout_s` seconds of
    silence (`request_timeout_s`). Sent once per silent spell, as soon as it is noticeable, so a
    front end can say at once what it waits for."""

    attempt: int
    server: str  # host[:port]
    silent_s: float
    timeout_s: float
    answering: bool

    @property
    def reason(self) -> str:
        what = "the answer paused" if self.answering else "no answer yet"
        return (f"{what} from {self.server} after {self.silent_s:g} s; "
                f"giving up after {self.timeout_s:g} s of silence")


@dataclass(frozen=True)
class Notice:
    """Something worth a line to the person that is not part of the conversation. `routine`:
    bookkeeping that went as it should or mends itself, which a front end may leave unsaid."""

    text: str
    routine: bool = False
