"""The price table: each model's own rates, the long-prompt band, and what log stats shows."""

from __future__ import annotations

import pytest

from scribe.agent.config import DEFAULT_MODEL, DEFAULT_OBSERVER_MODEL
from scribe.agent.pricing import call_cost, cost_parts, price_for, uncached_cost


def test_default_models_are_priced_at_their_own_list_rates() -> None:
    # Sonnet 5.5 reads at $0.10 (0.05x input), not the 0.1x most models have.
    assert call_cost(DEFAULT_MODEL, input=1_000_000, cache_read=0, cache_write=0, output=0) == pytest.approx(2.0)
    assert call_cost(DEFAULT_MODEL, input=0, cache_read=1_000_000, cache_write=0, output=0) == pytest.approx(0.10)
    assert call_cost(DEFAULT_MODEL, input=0, cache_read=0, cache_write=1_000_000, output=0) == pytest.approx(2.50)
    assert call_cost(DEFAULT_MODEL, input=0, cache_read=0, cache_write=0, output=0,
                     cache_write_1h=1_000_000) == pytest.approx(4.0)
    assert call_cost(DEFAULT_OBSERVER_MODEL, input=0, cache_read=0, cache_write=0,
                     output=1_000_000) == pytest.approx(0.50)


def test_haiku_5_5_prompt_over_100k_pays_the_long_band_on_every_token() -> None:
    short = call_cost("claude-haiku-5-5", input=100_000, cache_read=0, cache_write=0, output=1000)
    long = call_cost("claude-haiku-5-5", input=60_000, cache_read=40_001, cache_write=0, output=1000)
    assert short == pytest.approx((100_000 * 0.10 + 1000 * 0.50) / 1e6)
    assert long == pytest.approx((60_000 * 0.50 + 40_001 * 0.05 + 1000 * 2.50) / 1e6)
    assert uncached_cost("claude-haiku-5-5", input=100_001, cache_read=0, cache_write=0, output=0) == pytest.approx(
        100_001 * 0.50 / 1e6)


def test_longest_prefix_wins_and_unknown_models_get_the_default() -> None:
    assert price_for("claude-sonnet-5-5-20261001").base.read == pytest.approx(0.10)
    assert price_for("claude-sonnet-5").base.read == pytest.approx(0.20)
    assert price_for("claude-opus-4-1-20250805").input == pytest.approx(15.0)
    assert price_for("claude-opus-4-7").input == pytest.approx(5.0)
    assert price_for("qwen3-coder-local") == price_for(DEFAULT_MODEL)


def test_the_parts_of_a_long_prompt_call_add_up_to_its_cost() -> None:
    counts = {"input": 70_000, "cache_read": 40_000, "cache_write": 5_000, "output": 2_000}
    assert sum(cost_parts("claude-haiku-5-5", **counts).values()) == pytest.approx(
        call_cost("claude-haiku-5-5", **counts))
