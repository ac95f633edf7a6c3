"""What a failed connection was, as far as can be told without leaning on the SDK's internals.

The SDK's public API says a connection failed (`APIConnectionError`) or timed out
(`APITimeoutError`), and from 2.17 on it says so for a failure mid-stream too. Which HTTP
library it runs on, and which of that library's errors it chains as the cause, are its own
business and have changed between releases. So the decisions (retry or not) rest on the public
classes; the chain, walked with Python's own `__cause__`/`__context__` and matched only against
built-in exceptions or by a class's name, refines the words where it is there: a refused
connection is said at once instead of being retried, a connect timeout says it never connected.
Without the chain a failure is still reported and retried as a lost connection."""

from __future__ import annotations

from collections.abc import Iterator

# The SDK's message when it has nothing more to say about a lost connection.
GENERIC = "Connection error."


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then each exception it was raised from or during, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def connection_refused(exc: BaseException) -> bool:
    """Nothing listens at the address: the operating system's own refusal is in the chain."""
    return any(isinstance(e, ConnectionRefusedError) for e in chain(exc))


def connect_timed_out(exc: BaseException) -> bool:
    """The timeout was in connecting, not in waiting for the answer: the HTTP library's
    connect-timeout error (httpx's and its successors' `ConnectTimeout`) is in the chain."""
    return any(type(e).__name__ == "ConnectTimeout" for e in chain(exc))


def lost_words(exc: BaseException) -> str:
    """The words for a lost connection: the SDK's own message, unless it says no more than
    "Connection error.", then those of the innermost cause (the socket's own words)."""
    said = str(exc).strip()
    if said and said != GENERIC:
        return said
    *_, innermost = chain(exc)
    return str(innermost).strip() or type(innermost).__name__
