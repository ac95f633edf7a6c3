"""The price table: each model's own rates, the long-prompt band, and what log stats shows; a model
with no price is unpriced (never billed as Claude) unless a [prices.MODEL] table prices it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers import run_scribe, scribe_env, trust
from scribe.fakeapi import FakeMessagesServer, Reply
from scribe.log.events import UsageEvent
from scribe.log.pricing import (
    UNPRICED,
    PriceBook,
    call_cost,
    cost_parts,
    price_for,
    price_usage,
    uncached_cost,
)
from scribe.settings.values import DEFAULT_MODEL, DEFAULT_OBSERVER_MODEL


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


def test_longest_prefix_wins_and_unknown_models_have_no_price() -> None:
    assert price_for("claude-sonnet-5-5-20261001").base.read == pytest.approx(0.10)
    assert price_for("claude-sonnet-5").base.read == pytest.approx(0.20)
    assert price_for("claude-opus-4-1-20250805").input == pytest.approx(15.0)
    assert price_for("claude-opus-4-7").input == pytest.approx(5.0)
    # A local or unknown name is never billed at a Claude rate (it was, at Sonnet's, until issue 22).
    for name in ("qwen3-coder-local", "local", "smollm2", "qwen2.5-coder"):
        assert price_for(name) is None
        assert call_cost(name, input=1000, cache_read=0, cache_write=0, output=10) is None


def test_a_call_anthropics_api_did_not_answer_has_no_list_price_whatever_its_name() -> None:
    def call(server: str | None) -> UsageEvent:
        return UsageEvent(seq=1, ts="t", purpose="observer", model=DEFAULT_OBSERVER_MODEL, input=1000, cache_read=0,
                          cache_write=0, output=100, server=server)

    assert price_usage(call(None))[0] == pytest.approx(call_cost(DEFAULT_OBSERVER_MODEL, input=1000, cache_read=0,
                                                                  cache_write=0, output=100))
    assert price_usage(call("127.0.0.1:8080")) == UNPRICED
    # a configured table is the person's word for that name, on any server
    book = PriceBook({DEFAULT_OBSERVER_MODEL: {"input": 1.0, "output": 2.0}})
    assert book.price_usage(call("127.0.0.1:8080"))[0] == pytest.approx((1000 * 1.0 + 100 * 2.0) / 1e6)


def test_the_parts_of_a_long_prompt_call_add_up_to_its_cost() -> None:
    counts = {"input": 70_000, "cache_read": 40_000, "cache_write": 5_000, "output": 2_000}
    assert sum(cost_parts("claude-haiku-5-5", **counts).values()) == pytest.approx(
        call_cost("claude-haiku-5-5", **counts))


def _local_session(workspace: Path, home: Path, config: str | None) -> tuple[dict[str, Any], dict[str, int], Any]:
    """One headless turn on a model with no list price (`local`), with `config` as the
    workspace's config file; what `run --output json` said, what the server billed, the env."""
    if config is not None:
        (workspace / ".scribe").mkdir(exist_ok=True)
        (workspace / ".scribe" / "config.toml").write_text(config)
        trust(workspace, home)  # a workspace's own config applies once its person trusts it
    with FakeMessagesServer([Reply.text("Done locally.")]) as server:
        env = scribe_env(server.base_url, home)
        ran = run_scribe(["run", "-m", "local", "-o", "json", "say something"], workspace, env)
    assert ran.code == 0, ran.err
    return ran.json(), server.requests[0].usage or {}, env


def test_an_unknown_model_is_unpriced_everywhere(workspace: Path, home: Path) -> None:
    summary, billed, env = _local_session(workspace, home, None)
    assert summary["usage"]["cost_usd"] is None and summary["usage"]["unpriced_calls"] == 1
    assert summary["usage"]["input"] == billed["input_tokens"]  # the tokens are still shown

    stats = run_scribe(["log", "stats"], workspace, env)
    assert stats.code == 0, stats.err
    assert "$" not in stats.out  # no dollar figure at all, not even $0
    assert "unpriced" in stats.out and "local has no price" in stats.out
    as_json = run_scribe(["log", "stats", "--json"], workspace, env).json()
    assert as_json["total"]["cost_usd"] is None and as_json["per_call"][0]["cost_usd"] is None
    listed = run_scribe(["log", "list", "--json"], workspace, env).json()
    assert listed[0]["cost_usd"] is None

    page = run_scribe(["log", "html", "-o", "-"], workspace, env)
    assert page.code == 0, page.err
    headline = page.out.split('<dl class="headline">', 1)[1].split("</dl>", 1)[0]
    assert "<dt>cost</dt><dd>unpriced</dd>" in headline and "$" not in headline


def test_a_price_table_in_the_config_prices_an_unknown_model(workspace: Path, home: Path) -> None:
    config = '[prices.local]\ninput = 1.5\noutput = 6.0\ncache_read = 0.15\ncache_write = 1.5\n'
    summary, billed, env = _local_session(workspace, home, config)
    expected = (billed["input_tokens"] * 1.5 + billed["cache_read_input_tokens"] * 0.15
                + billed["cache_creation_input_tokens"] * 1.5 + billed["output_tokens"] * 6.0) / 1e6
    assert expected > 0
    assert summary["usage"]["cost_usd"] == pytest.approx(expected, abs=1e-6)

    as_json = run_scribe(["log", "stats", "--json"], workspace, env).json()
    assert as_json["total"]["cost_usd"] == pytest.approx(expected, abs=1e-6)
    stats = run_scribe(["log", "stats"], workspace, env)
    assert f"${expected:,.4f}" in stats.out and "unpriced" not in stats.out.replace("is unpriced", "")
    page = run_scribe(["log", "html", "-o", "-"], workspace, env)
    assert f"<dt>cost</dt><dd>${expected:,.4f}</dd>" in page.out


def test_a_price_table_must_name_its_rates(workspace: Path, home: Path) -> None:
    (workspace / ".scribe").mkdir()
    (workspace / ".scribe" / "config.toml").write_text('[prices.local]\ninput = 1.5\nouput = 6.0\n')
    trust(workspace, home)
    ran = run_scribe(["config"], workspace, scribe_env("http://127.0.0.1:9", home))
    assert ran.code == 2
    assert "prices.local: unknown key ouput (known: input, output, cache_read, cache_write)" in ran.err


def test_a_workspace_trusted_for_one_run_prices_with_its_own_tables(workspace: Path, home: Path) -> None:
    (workspace / ".scribe").mkdir()
    (workspace / ".scribe" / "config.toml").write_text('[prices.local]\ninput = 2.0\noutput = 8.0\n')
    with FakeMessagesServer([Reply.text("Done locally.")]) as server:
        ran = run_scribe(["run", "--trust-workspace", "-m", "local", "-o", "json", "say something"], workspace,
                         scribe_env(server.base_url, home))
    assert ran.code == 0, ran.err
    billed = server.requests[0].usage or {}
    expected = (sum(billed[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
                * 2.0 + billed["output_tokens"] * 8.0) / 1e6
    assert expected > 0
    assert ran.json()["usage"]["cost_usd"] == pytest.approx(expected, abs=1e-6)
