"""The text of one model call that the front ends have shown, kept right across retries.

A retried call streams its answer again from the start. Sending that again would print the
sentence twice (`scribe run ... > answer.md` held it twice while the log held it once), so the
retried text is held back while it repeats what was shown, and only what goes past it is sent.
If it says something else, what was shown is withdrawn and the new answer is sent from its
start. Pure: the client feeds it text and passes on what it returns.
"""

from __future__ import annotations

from .events import TextDelta, TextWithdrawn


class ShownText:
    def __init__(self) -> None:
        self._parts: list[str] = []  # what the front ends have, as sent
        self._replay: str | None = None  # during a retry: the shown text being repeated
        self._pos = 0  # how much of it the retry has repeated so far

    def retry(self) -> None:
        """A new attempt begins; its text is compared with what was shown."""
        self._replay = "".join(self._parts)
        self._pos = 0

    def take(self, text: str) -> list[TextDelta | TextWithdrawn]:
        """What to send for `text`, the next piece of the current attempt's answer."""
        if self._replay is None:
            self._parts.append(text)
            return [TextDelta(text)]
        shown, pos = self._replay, self._pos
        overlap = text[: len(shown) - pos]
        if not shown.startswith(overlap, pos):
            return self._withdraw(shown[:pos] + text)
        self._pos = pos + len(overlap)
        beyond = text[len(overlap):]
        if not beyond:
            return []
        self._replay = None  # caught up: from here on the text is new
        self._parts.append(beyond)
        return [TextDelta(beyond)]

    def finish(self) -> list[TextDelta | TextWithdrawn]:
        """The attempt completed. An answer that stopped short of what was shown withdraws it."""
        if self._replay is None or self._pos == len(self._replay):
            return []
        return self._withdraw(self._replay[: self._pos])

    def _withdraw(self, heard: str) -> list[TextDelta | TextWithdrawn]:
        withdrawn = TextWithdrawn("".join(self._parts))
        self._replay, self._parts = None, [heard] if heard else []
        return [withdrawn, TextDelta(heard)] if heard else [withdrawn]
