"""The price table usage is estimated with (docs/operations.md): the providers' list prices
(usage_prices.json) with the operator's over them (CAIRN_PRICES), in US dollars per million
tokens, and what a step's tokens cost by it."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

# A step's token counts a cost is computed from (domain.runs.Step's fields).
TOKENS = {"prompt_tokens", "completion_tokens", "cached_input_tokens", "cache_write_tokens"}


@cache
def _listed() -> dict[str, dict[str, float]]:
    text = resources.files("cairn").joinpath("usage_prices.json").read_text()
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


def prices(overrides: str = "") -> dict[str, dict[str, float]]:
    """The price table: the listed prices, with the operator's (CAIRN_PRICES, JSON) over them."""
    table = dict(_listed())
    if overrides:
        table.update(parse_prices(overrides))
    return table


def parse_prices(text: str) -> dict[str, dict[str, float]]:
    """CAIRN_PRICES: {"model": {"input": $, "output": $, "cached_input": $, "cache_write": $}}
    in US dollars per million tokens; a ValueError naming what is wrong."""
    try:
        found = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"CAIRN_PRICES is not JSON: {err}") from None
    if not isinstance(found, dict):
        raise ValueError("CAIRN_PRICES: an object of models, each with its prices")
    for model, price in found.items():
        if not isinstance(price, dict) or not price:
            raise ValueError(f"CAIRN_PRICES.{model}: an object of prices per million tokens")
        for kind, value in price.items():
            if kind not in ("input", "output", "cached_input", "cache_write"):
                raise ValueError(f"CAIRN_PRICES.{model}.{kind}: not a kind of token")
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"CAIRN_PRICES.{model}.{kind}: a price of at least 0")
    return found


def price_of(model: str, table: dict[str, dict[str, float]]) -> dict[str, float] | None:
    """The longest priced name the model's contains (`gpt-4o-mini-2024-07-18` is
    `gpt-4o-mini`'s, `us.anthropic.claude-sonnet-4-...` is `claude-sonnet-4`'s)."""
    named = [k for k in table if k and k in model]
    return table[max(named, key=len)] if named else None


def cost(row: dict[str, Any], price: dict[str, float] | None) -> float | None:
    if price is None:
        return None
    cached, written = int(row["cached_input_tokens"]), int(row["cache_write_tokens"])
    uncached = max(0, int(row["prompt_tokens"]) - cached - written)
    dollars: float = (
        uncached * price.get("input", 0)
        + cached * price.get("cached_input", price.get("input", 0))
        + written * price.get("cache_write", price.get("input", 0))
        + int(row["completion_tokens"]) * price.get("output", 0)
    )
    return round(dollars / 1_000_000, 6)


@cache
def _table(overrides: str) -> dict[str, dict[str, float]]:
    return prices(overrides)


def step_cost(model: str | None, tokens: dict[str, Any], overrides: str = "") -> float:
    """What a step's model call cost at the operator's prices (0 for a model not priced):
    the month's total a cost budget is checked against (docs/operations.md)."""
    price = price_of(model, _table(overrides)) if model else None
    return cost(tokens, price) or 0.0
