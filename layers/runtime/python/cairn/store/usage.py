"""What organizations used, read from the steps their runs left (migration 0036): a step's
row is written once, by its checkpoint, so a retried or redelivered step counts once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cairn.store.db import Connection

SUMS = (
    "prompt_tokens",
    "completion_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "tool_calls",
)
USAGE = f"""
SELECT s.organization_id, (s.created_at AT TIME ZONE 'UTC')::date AS day, s.agent_id,
       coalesce(s.model, '') AS model, count(*) AS steps,
       count(*) FILTER (WHERE s.kind IN ('llm', 'compaction') AND s.model IS NOT NULL)
           AS model_calls,
       {", ".join(f"coalesce(sum(s.{c}), 0)::bigint AS {c}" for c in SUMS)}
FROM steps s
WHERE (%(org)s::text IS NULL OR s.organization_id = %(org)s)
  AND s.created_at >= %(start)s AND s.created_at < %(end)s
  AND (%(agent)s::text IS NULL OR s.agent_id = %(agent)s)
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4
"""


def rows(
    conn: Connection,
    org: str | None,
    start: datetime,
    end: datetime,
    agent_id: str | None = None,
) -> list[dict[str, Any]]:
    """Per organization, day (UTC), agent and model: steps, model calls, tokens, tool calls.
    `org` None: every organization (the operator's)."""
    params = {"org": org, "start": start, "end": end, "agent": agent_id}
    return list(conn.execute(USAGE, params).fetchall())
