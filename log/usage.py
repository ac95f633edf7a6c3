"""The tokens of a model call as the server billed them: the one usage value. The model client
makes it from the SDK's answer (model/client.py), a usage event records it (its log line holds
the four counts flat: `UsageEvent.tokens` reads them back), the figures sum it (log/figures.py)
for the index, every `--json` output, the REPL's bar, the session page and telemetry.

In JSON, everywhere, its keys mean what they mean here: `input` is the uncached input only,
`prompt_tokens` all three kinds of prompt token (docs/log-format.md, "Usage in JSON")."""

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

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.cache_read + other.cache_read,
                      self.cache_write + other.cache_write, self.output + other.output)

    def counts(self) -> dict[str, int]:
        """The four counts by the names the log, the JSON outputs and the prices use."""
        return asdict(self)
