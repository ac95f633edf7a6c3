"""The price tables a person configures (`[prices.MODEL]`), for models the list prices do not
know: read from the config files that apply, checked, and put in front of the list prices."""

from __future__ import annotations

import math
from typing import Any

from scribe.log.pricing import PRICE_KEYS, PriceBook

from .files import ConfigError, ConfigFiles
from .values import clipped_repr


def read_prices(config: ConfigFiles) -> dict[str, dict[str, float]]:
    """The `[prices.MODEL]` tables of the user and workspace config (the workspace's win, model by
    model): USD per million tokens of `input` and `output` (both required), `cache_read` and
    `cache_write` (the input rate when left out), for a model the list prices do not know."""
    prices: dict[str, dict[str, float]] = {}
    # the files that apply: an untrusted workspace's own prices are a stranger's, like its settings
    for path, data in config.parsed:
        tables = data.get("prices", {})
        if not isinstance(tables, dict):
            raise ConfigError(f"{path}: prices must be tables, [prices.MODEL] with input and output")
        for model, rates in tables.items():
            prices[model] = _price_table(rates, f"{path}: prices.{model}")
    return prices


def price_book(config: ConfigFiles) -> PriceBook:
    """What the front ends price with: the configured tables, then the list prices."""
    return PriceBook(read_prices(config))


def _price_table(rates: Any, where: str) -> dict[str, float]:
    if not isinstance(rates, dict):
        raise ConfigError(f"{where}: expected a table with {', '.join(PRICE_KEYS)}")
    unknown = sorted(set(rates) - set(PRICE_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {', '.join(unknown)} (known: {', '.join(PRICE_KEYS)})")
    missing = [k for k in ("input", "output") if k not in rates]
    if missing:
        raise ConfigError(f"{where}: {' and '.join(missing)} missing (USD per million tokens)")
    table: dict[str, float] = {}
    for key, value in rates.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ConfigError(f"{where}: {key} must be a number of dollars per million tokens, got {clipped_repr(value)}")
        table[key] = float(value)
    return table
