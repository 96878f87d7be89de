"""An organization's budgets and limits (migration 0037) and what it used this month."""

from __future__ import annotations

from typing import Any

from cairn.store.db import Connection
from cairn.store.sql_text import Native

KINDS = ("monthly_tokens", "monthly_cost_usd", "requests_per_minute", "max_runs")

THIS_MONTH = "date_trunc('month', now() AT TIME ZONE 'UTC')::date"

# Which monthly budget the organization spent, if one is ('monthly_tokens' or
# 'monthly_cost_usd', else NULL): one row by its key in each table, read inside the statement
# that starts a run (store/runs.py) or claims a step (store/claim.py). `{org}` is the
# statement's own parameter for the organization.
SPENT = f"""
(SELECT CASE WHEN m.tokens + m.embedding_tokens >= l.monthly_tokens THEN 'monthly_tokens'
             WHEN m.cost_usd >= l.monthly_cost_usd THEN 'monthly_cost_usd' END
 FROM org_limits l
 JOIN org_usage_months m ON m.organization_id = l.organization_id AND m.month = {THIS_MONTH}
 WHERE l.organization_id = {{org}})
"""

# The agents an organization's runs may hold at once: its own limit, else the share every
# organization has (CAIRN_ORG_MAX_RUNS), in statements naming them %(org)s and %(cap)s;
# asked only where the share is on (cap > 0).
ORG_CAP = "coalesce((SELECT max_runs FROM org_limits WHERE organization_id = %(org)s), %(cap)s)"

# Sent last in the checkpoint's pipeline (store/checkpoints.py), so the organization's row
# is locked only from here to the commit that follows.
ADD_TO_MONTH = f"""
INSERT INTO org_usage_months (organization_id, month, tokens, cost_usd)
VALUES (%(org)s, {THIS_MONTH}, %(tokens)s, %(cost)s)
ON CONFLICT (organization_id, month) DO UPDATE
SET tokens = org_usage_months.tokens + EXCLUDED.tokens,
    cost_usd = org_usage_months.cost_usd + EXCLUDED.cost_usd
"""
# Planned on every step behind RDS Proxy, about 0.02 ms: a function too (migration 0051).
ADDING_TO_MONTH = Native.of(ADD_TO_MONTH).served(
    "cairn_add_to_month", ("text", "bigint", "numeric")
)

# An embedding call's tokens and cost: the month's (what budgets read) and the day's, per
# model (what the usage rows show), in one statement after the call returned.
ADD_EMBEDDING = f"""
WITH month AS (
    INSERT INTO org_usage_months (organization_id, month, embedding_tokens, cost_usd)
    VALUES (%(org)s, {THIS_MONTH}, %(tokens)s, %(cost)s)
    ON CONFLICT (organization_id, month) DO UPDATE
    SET embedding_tokens = org_usage_months.embedding_tokens + EXCLUDED.embedding_tokens,
        cost_usd = org_usage_months.cost_usd + EXCLUDED.cost_usd
)
INSERT INTO embedding_usage (organization_id, day, model, calls, tokens, cost_usd)
VALUES (%(org)s, (now() AT TIME ZONE 'UTC')::date, %(model)s, 1, %(tokens)s, %(cost)s)
ON CONFLICT (organization_id, day, model) DO UPDATE
SET calls = embedding_usage.calls + 1, tokens = embedding_usage.tokens + EXCLUDED.tokens,
    cost_usd = embedding_usage.cost_usd + EXCLUDED.cost_usd
"""
EMBEDDING_ROWS = """
SELECT organization_id, day, model, calls, tokens, cost_usd::float8 AS cost_usd
FROM embedding_usage
WHERE (%(org)s::text IS NULL OR organization_id = %(org)s) AND day >= %(start)s::date
  AND day < %(end)s::date
ORDER BY 1, 2, 3
"""

# A model call outside a step: the month's total (what budgets read) and the day's row.
ADD_CALL = f"""
WITH month AS (
    INSERT INTO org_usage_months (organization_id, month, tokens, cost_usd)
    VALUES (%(org)s, {THIS_MONTH}, %(prompt)s + %(completion)s, %(cost)s)
    ON CONFLICT (organization_id, month) DO UPDATE
    SET tokens = org_usage_months.tokens + EXCLUDED.tokens,
        cost_usd = org_usage_months.cost_usd + EXCLUDED.cost_usd
)
INSERT INTO model_calls (organization_id, day, model, calls, prompt_tokens, completion_tokens)
VALUES (%(org)s, (now() AT TIME ZONE 'UTC')::date, %(model)s, 1, %(prompt)s, %(completion)s)
ON CONFLICT (organization_id, day, model) DO UPDATE
SET calls = model_calls.calls + 1,
    prompt_tokens = model_calls.prompt_tokens + EXCLUDED.prompt_tokens,
    completion_tokens = model_calls.completion_tokens + EXCLUDED.completion_tokens
"""
CALL_ROWS = """
SELECT organization_id, day, model, calls, prompt_tokens, completion_tokens FROM model_calls
WHERE (%(org)s::text IS NULL OR organization_id = %(org)s) AND day >= %(start)s::date
  AND day < %(end)s::date
ORDER BY 1, 2, 3
"""

PUT_LIMITS = """
INSERT INTO org_limits (organization_id, monthly_tokens, monthly_cost_usd, requests_per_minute,
                        max_runs, updated_at)
VALUES (%(org)s, %(monthly_tokens)s, %(monthly_cost_usd)s, %(requests_per_minute)s,
        %(max_runs)s, now())
ON CONFLICT (organization_id) DO UPDATE
SET monthly_tokens = EXCLUDED.monthly_tokens, monthly_cost_usd = EXCLUDED.monthly_cost_usd,
    requests_per_minute = EXCLUDED.requests_per_minute, max_runs = EXCLUDED.max_runs,
    updated_at = now()
"""

SELECT_LIMITS = f"""
SELECT o.id AS organization_id, l.monthly_tokens, l.monthly_cost_usd::float8,
       l.requests_per_minute, l.max_runs, l.updated_at,
       {THIS_MONTH} AS month, coalesce(m.tokens + m.embedding_tokens, 0) AS month_tokens,
       coalesce(m.embedding_tokens, 0) AS month_embedding_tokens,
       coalesce(m.cost_usd, 0)::float8 AS month_cost_usd,
       ceil(extract(epoch FROM (date_trunc('month', now() AT TIME ZONE 'UTC')
                                + interval '1 month') - now() AT TIME ZONE 'UTC'))::int
           AS month_ends_in_seconds
FROM organizations o
LEFT JOIN org_limits l ON l.organization_id = o.id
LEFT JOIN org_usage_months m ON m.organization_id = o.id AND m.month = {THIS_MONTH}
WHERE o.id = %(org)s
"""


def put(conn: Connection, org_id: str, limits: dict[str, Any]) -> None:
    conn.execute(PUT_LIMITS, {"org": org_id, **{k: limits.get(k) for k in KINDS}})


def get(conn: Connection, org_id: str) -> dict[str, Any] | None:
    """The organization's limits and this month's use; None for an unknown organization."""
    row = conn.execute(SELECT_LIMITS, {"org": org_id}).fetchone()
    return dict(row) if row else None


def spent(conn: Connection, org_id: str) -> str | None:
    """Which monthly budget the organization spent, if one is."""
    row = conn.execute("SELECT " + SPENT.format(org="%(org)s") + " AS spent", {"org": org_id})
    found = row.fetchone()
    return found["spent"] if found else None


def add_embedding(conn: Connection, org_id: str, model: str, tokens: int, cost: float) -> None:
    conn.execute(ADD_EMBEDDING, {"org": org_id, "model": model, "tokens": tokens, "cost": cost})


def embedding_rows(
    conn: Connection, org_id: str | None, start: Any, end: Any
) -> list[dict[str, Any]]:
    """Per organization, day (UTC) and model: embedding calls, tokens and their cost."""
    params = {"org": org_id, "start": start, "end": end}
    return list(conn.execute(EMBEDDING_ROWS, params).fetchall())


def add_call(
    conn: Connection, org_id: str, model: str, prompt: int, completion: int, cost: float
) -> None:
    params = {"org": org_id, "model": model, "prompt": prompt, "completion": completion}
    conn.execute(ADD_CALL, {**params, "cost": cost})


def call_rows(conn: Connection, org_id: str | None, start: Any, end: Any) -> list[dict[str, Any]]:
    """Per organization, day (UTC) and model: model calls made outside a step."""
    return list(conn.execute(CALL_ROWS, {"org": org_id, "start": start, "end": end}).fetchall())
