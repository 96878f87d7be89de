"""Scheduled messages and the ones due."""

from __future__ import annotations

from datetime import datetime

from cairn.domain.schedules import Schedule
from cairn.store.db import Connection
from cairn.store.rows import Order, page, to_params

INSERT = """
INSERT INTO schedules (id, organization_id, agent_id, messages, kind, run_at, cron, timezone,
                       next_run_at, created_at)
SELECT %(id)s, %(organization_id)s, %(agent_id)s, %(messages)s, %(kind)s, %(run_at)s,
       %(cron)s, %(timezone)s, %(next_run_at)s, %(created_at)s
WHERE EXISTS (SELECT 1 FROM agents WHERE organization_id = %(organization_id)s
              AND id = %(agent_id)s)
ON CONFLICT (id) DO NOTHING
RETURNING *
"""
SELECT = "SELECT * FROM schedules WHERE organization_id = %(org)s AND id = %(id)s"
DELETE = "DELETE FROM schedules WHERE organization_id = %(org)s AND id = %(id)s RETURNING *"
# Due ones, each taken by one sweeper (others skip it): the caller fires and moves it on in
# the same transaction. At most `per_org` of one organization's in a round, its earliest
# (one tenant's thousand due schedules do not fill a round and hold back everyone else's;
# the rest fire in the next rounds). The ranking is a subquery: FOR UPDATE takes no window.
DUE = """
SELECT * FROM schedules WHERE id IN (
    SELECT id FROM (
        SELECT id, row_number() OVER (PARTITION BY organization_id
                                      ORDER BY next_run_at, id) AS nth
        FROM schedules WHERE next_run_at IS NOT NULL AND next_run_at <= %(now)s
    ) ranked WHERE nth <= %(per_org)s
)
ORDER BY next_run_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED
"""
ONE_DUE = """
SELECT * FROM schedules WHERE organization_id = %(org)s AND id = %(id)s FOR UPDATE
"""
MOVE_ON = """
UPDATE schedules SET next_run_at = %(next)s, last_run_at = %(fired)s
WHERE id = %(id)s
"""


# How many schedules an agent has that will still fire, its row locked first so that two
# creates at once count one after the other (the cap holds exactly).
ACTIVE = """
WITH agent AS (
    SELECT id FROM agents WHERE organization_id = %(org)s AND id = %(agent_id)s FOR UPDATE
)
SELECT count(*) AS n FROM schedules s JOIN agent ON s.agent_id = agent.id
WHERE s.next_run_at IS NOT NULL
"""


def active_for_agent(conn: Connection, org_id: str, agent_id: str) -> int:
    """The agent's schedules still to fire, counted under a lock of its row (to be held
    through the create that follows, in the same transaction)."""
    row = conn.execute(ACTIVE, {"org": org_id, "agent_id": agent_id}).fetchone()
    return int(row["n"]) if row else 0


def create(conn: Connection, schedule: Schedule) -> Schedule | None:
    """The schedule stored; None if its agent is not the organization's (or it exists)."""
    row = conn.execute(INSERT, to_params(schedule, json_fields=("messages",))).fetchone()
    return Schedule.model_validate(row) if row else None


def get(conn: Connection, org_id: str, schedule_id: str) -> Schedule | None:
    row = conn.execute(SELECT, {"org": org_id, "id": schedule_id}).fetchone()
    return Schedule.model_validate(row) if row else None


def delete(conn: Connection, org_id: str, schedule_id: str) -> Schedule | None:
    row = conn.execute(DELETE, {"org": org_id, "id": schedule_id}).fetchone()
    return Schedule.model_validate(row) if row else None


def of_agent(
    conn: Connection,
    org_id: str,
    agent_id: str,
    *,
    after: str | None,
    limit: int,
    order: Order = "asc",
) -> list[Schedule]:
    return page(
        conn,
        "schedules",
        Schedule,
        org_id,
        equals={"agent_id": agent_id},
        after=after,
        limit=limit,
        order=order,
    )


def due(conn: Connection, now: datetime, limit: int, per_org: int) -> list[Schedule]:
    found = conn.execute(DUE, {"now": now, "limit": limit, "per_org": per_org})
    return [Schedule.model_validate(r) for r in found]


def lock(conn: Connection, org_id: str, schedule_id: str) -> Schedule | None:
    row = conn.execute(ONE_DUE, {"org": org_id, "id": schedule_id}).fetchone()
    return Schedule.model_validate(row) if row else None


def move_on(
    conn: Connection, schedule_id: str, fired: datetime, following: datetime | None
) -> None:
    conn.execute(MOVE_ON, {"id": schedule_id, "fired": fired, "next": following})
