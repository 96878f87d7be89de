"""Agents whose embedding jobs are held back after failures (migration 0021)."""

from __future__ import annotations

from typing import Any, NamedTuple

from cairn.store.db import Connection

# One more failure of the agent's current config: the count goes on; of another config
# (changed since), it starts again at one. The next try waits the count's delay; past the
# last delay, none (NULL: make_interval of NULL is NULL).
RECORD_FAILURE = """
INSERT INTO embedding_holds AS h (agent_id, organization_id, config, failures, next_try_at,
                                  last_error)
SELECT a.id, a.organization_id, a.embedding_config, 1,
       now() + make_interval(secs => (%(delays)s::float8[])[1]), %(error)s
FROM agents a WHERE a.organization_id = %(org)s AND a.id = %(agent)s
ON CONFLICT (agent_id) DO UPDATE SET
    failures = CASE WHEN h.config IS NOT DISTINCT FROM excluded.config
                    THEN h.failures + 1 ELSE 1 END,
    next_try_at = now() + make_interval(secs => (%(delays)s::float8[])[
        CASE WHEN h.config IS NOT DISTINCT FROM excluded.config THEN h.failures + 1 ELSE 1 END]),
    config = excluded.config, last_error = excluded.last_error, updated_at = now()
RETURNING failures, next_try_at, last_error
"""
RELEASE = "DELETE FROM embedding_holds WHERE organization_id = %(org)s AND agent_id = %(agent)s"
SELECT = """
SELECT failures, next_try_at, last_error FROM embedding_holds
WHERE organization_id = %(org)s AND agent_id = %(agent)s
"""


class Hold(NamedTuple):
    failures: int
    stopped: bool
    last_error: str


def record_failure(
    conn: Connection, org_id: str, agent_id: str, error: str, delays: list[float]
) -> Hold | None:
    """Count one failure; the next try waits `delays[failures - 1]`, and there is none once
    the failures outnumber `delays`. None if the agent is gone."""
    params = {"org": org_id, "agent": agent_id, "error": error[:1000], "delays": delays}
    return _hold(conn.execute(RECORD_FAILURE, params).fetchone())


def release(conn: Connection, org_id: str, agent_id: str) -> None:
    conn.execute(RELEASE, {"org": org_id, "agent": agent_id})


def get(conn: Connection, org_id: str, agent_id: str) -> Hold | None:
    return _hold(conn.execute(SELECT, {"org": org_id, "agent": agent_id}).fetchone())


def _hold(row: dict[str, Any] | None) -> Hold | None:
    if row is None:
        return None
    return Hold(int(row["failures"]), row["next_try_at"] is None, row["last_error"])
