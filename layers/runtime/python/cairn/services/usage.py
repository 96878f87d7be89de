"""Usage per organization, day, agent and model (docs/operations.md): steps, model calls,
tokens (input, output, cached, cache writes, reasoning), tool calls, and an estimated cost
from a price table (usage_prices.json, changed with CAIRN_PRICES). Read by an organization
through GET /v1/usage, and for every organization by the operator (`cairn-admin usage`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from cairn.errors import InvalidArgumentError
from cairn.prices import cost, price_of, prices
from cairn.store import limits, usage
from cairn.store.db import Database

MAX_DAYS = 366
DEFAULT_DAYS = 30
COUNTS = ("steps", "model_calls", *usage.SUMS)


def report(
    db: Database,
    org: str | None,
    *,
    start: date | None = None,
    end: date | None = None,
    agent_id: str | None = None,
    overrides: str = "",
    today: date | None = None,
) -> dict[str, Any]:
    """Days `start` to `end` (UTC, both included; the last 30 by default)."""
    last = end or today or datetime.now(UTC).date()
    first = start or last - timedelta(days=DEFAULT_DAYS - 1)
    if first > last:
        raise InvalidArgumentError("start_date: after end_date")
    if (last - first).days >= MAX_DAYS:
        raise InvalidArgumentError(f"end_date: at most {MAX_DAYS} days from start_date")
    since = datetime.combine(first, time(), UTC)
    until = datetime.combine(last + timedelta(days=1), time(), UTC)
    with db.connection() as conn:
        found = usage.rows(conn, org, since, until, agent_id)
        embedded = [] if agent_id else limits.embedding_rows(conn, org, since, until)
        # model calls outside a step (a tool generated): an organization's, no agent's
        outside = [] if agent_id else limits.call_rows(conn, org, since, until)
    found = sorted(
        [
            *found,
            *(
                dict.fromkeys(COUNTS, 0) | dict(r, agent_id=None, model_calls=r["calls"])
                for r in outside
            ),
        ],
        key=lambda r: (r["organization_id"], r["day"], r["agent_id"] or "", r["model"] or ""),
    )
    table = prices(overrides)
    shown, unpriced = [], set()
    total: dict[str, Any] = dict.fromkeys(COUNTS, 0) | {"estimated_cost": 0.0}
    for row in found:
        price = price_of(row["model"], table)
        dollars = cost(row, price)
        if dollars is None and row["model"]:
            unpriced.add(row["model"])
        item = {
            **({"organization_id": row["organization_id"]} if org is None else {}),
            "day": row["day"].isoformat(),
            "agent_id": row["agent_id"],
            "model": row["model"] or None,
            **{k: int(row[k]) for k in COUNTS},
            "estimated_cost": dollars,
        }
        shown.append(item)
        for k in COUNTS:
            total[k] += item[k]
        total["estimated_cost"] = round(total["estimated_cost"] + (dollars or 0), 6)
    # Embeddings, per day and model (an organization's, not an agent's: files and archives
    # are shared): their tokens count toward the monthly token budget too.
    embeddings = [
        {
            **({"organization_id": row["organization_id"]} if org is None else {}),
            "day": row["day"].isoformat(),
            "model": row["model"],
            "calls": int(row["calls"]),
            "tokens": int(row["tokens"]),
            "estimated_cost": round(float(row["cost_usd"]), 6),
        }
        for row in embedded
    ]
    total["embedding_tokens"] = sum(e["tokens"] for e in embeddings)
    total["estimated_cost"] = round(
        total["estimated_cost"] + sum(e["estimated_cost"] for e in embeddings), 6
    )
    return {
        "start_date": first.isoformat(),
        "end_date": last.isoformat(),
        "currency": "USD",
        "rows": shown,
        "embeddings": embeddings,
        "total": total,
        "unpriced_models": sorted(unpriced),
    }
