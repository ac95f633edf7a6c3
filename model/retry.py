"""When a failed model call is tried again, and after how long. Pure: the client sleeps.

scribe retries itself rather than through the SDK's built-in retries, for three reasons: one
policy covers rate limits, server errors, dropped connections and streams cut mid-way alike;
its backoff is configurable; and each retry is an event the person sees, not a frozen spinner.
The rules follow the API's: retry 408, 409, 429 and 5xx (529 is "overloaded"), obey
`x-should-retry` and `retry-after(-ms)`, never retry other 4xx.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

RETRYABLE_STATUS = {408, 409, 429}
MAX_SERVER_WAIT_S = 120.0  # a retry-after longer than this is not worth sitting through


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4  # tries after the first
    backoff_s: float = 1.0  # first wait; doubles each retry
    max_backoff_s: float = 30.0

    def delay(self, retry: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based)."""
        if retry_after_s is not None and retry_after_s >= 0:
            return min(retry_after_s, MAX_SERVER_WAIT_S)
        base = min(self.backoff_s * 2 ** (retry - 1), self.max_backoff_s)
        return base * (1 - 0.25 * random.random())  # jitter, so many clients don't retry in step


def should_retry(status: int, headers: dict[str, str]) -> bool:
    verdict = headers.get("x-should-retry")
    if verdict in ("true", "false"):
        return verdict == "true"
    return status in RETRYABLE_STATUS or status >= 500


def retry_after(headers: dict[str, str]) -> float | None:
    """The server's requested wait in seconds, from `retry-after-ms` or `retry-after`."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if seconds > 0:
            return seconds
    return None
