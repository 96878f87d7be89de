"""The price table: a model's price by the longest listed name it contains, the operator's
prices over the listed ones, and a step's cost with its cache reads and writes."""

from __future__ import annotations

import pytest

from cairn.prices import cost, price_of, prices


def test_a_model_takes_the_longest_listed_name_it_contains() -> None:
    table = prices()
    assert price_of("gpt-4o-mini-2024-07-18", table) == table["gpt-4o-mini"]
    assert price_of("gpt-4o-2024-08-06", table) == table["gpt-4o"]
    assert price_of("us.anthropic.claude-sonnet-4-20250514-v1:0", table) == table["claude-sonnet-4"]
    assert price_of("my-finetune", table) is None
    mine = prices('{"my-finetune": {"input": 3, "output": 12}, "gpt-4o": {"input": 1}}')
    assert price_of("my-finetune-v2", mine) == {"input": 3, "output": 12}
    assert mine["gpt-4o"] == {"input": 1}  # the operator's replaces the listed one


def test_a_steps_cost_counts_cache_reads_and_writes_at_their_prices() -> None:
    price = {"input": 3.0, "cached_input": 0.3, "cache_write": 3.75, "output": 15.0}
    row = {
        "prompt_tokens": 10_000,  # 6,000 uncached + 3,000 read + 1,000 written
        "cached_input_tokens": 3_000,
        "cache_write_tokens": 1_000,
        "completion_tokens": 500,
    }
    expected = (6_000 * 3.0 + 3_000 * 0.3 + 1_000 * 3.75 + 500 * 15.0) / 1e6
    assert cost(row, price) == pytest.approx(expected)
    assert cost(row, {"input": 1.0, "output": 2.0}) == pytest.approx((10_000 + 1_000) / 1e6)
    assert cost(row, None) is None
