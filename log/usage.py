"""The tokens of a model call as the server billed them: the one value type the model client
returns (model/client.py), a usage event reads as (`UsageEvent.tokens`) and the figures sum
(log/figures.py), down to the REPL's bar and the session page."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Tokens:
    """The four counts a call is billed by; the prompt is the first three."""

    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token, however billed: input + cache read + cache write."""
        return self.input + self.cache_read + self.cache_write

    @property
    def hit_rate(self) -> float:
        """The share of the prompt read from the cache (0 for no prompt)."""
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else 0.0

    def counts(self) -> dict[str, int]:
        """The four counts by the names the log, the JSON outputs and the prices use."""
        return asdict(self)
