"""Message batches and the runs each started; a batch's status is read from its runs."""

from __future__ import annotations

from datetime import datetime

from psycopg import sql

from cairn.domain.batches import Batch
from cairn.domain.messages import Message
from cairn.store.db import Connection
from cairn.store.messages import MESSAGE_COLUMNS
from cairn.store.rows import Order, filtered_page

INSERT_BATCH = """
INSERT INTO batches (id, organization_id, created_by_id, callback_url, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(created_by_id)s, %(callback_url)s, %(created_at)s,
        %(updated_at)s)
"""
INSERT_RUNS = """
INSERT INTO batch_runs (batch_id, run_id, position)
SELECT %(batch_id)s, r.run_id, r.position FROM unnest(%(run_ids)s::text[])
    WITH ORDINALITY AS r (run_id, position)
"""
# The runs' statuses decide the batch's: running while any has not ended.
_SELECT = """
SELECT b.*, s.run_ids, s.completed_at,
       CASE WHEN b.cancelled_at IS NOT NULL THEN 'cancelled'
            WHEN s.open > 0 THEN 'running' ELSE 'completed' END AS status
FROM batches b
CROSS JOIN LATERAL (
    SELECT COALESCE(array_agg(br.run_id ORDER BY br.position), '{{}}') AS run_ids,
           count(*) FILTER (WHERE r.status IN ('created', 'running')) AS open,
           max(r.completed_at) AS completed_at
    FROM batch_runs br JOIN runs r ON r.id = br.run_id WHERE br.batch_id = b.id
) s
"""
SELECT_BATCH = sql.SQL(_SELECT + " WHERE b.organization_id = {org} AND b.id = {id}")
LIST_RUNNING = sql.SQL(
    _SELECT + " WHERE b.organization_id = {org} AND b.cancelled_at IS NULL AND s.open > 0"
    " AND {cursor} ORDER BY {order_by} LIMIT {limit}"
)
CANCEL = """
UPDATE batches SET cancelled_at = coalesce(cancelled_at, %(now)s), updated_at = %(now)s
WHERE organization_id = %(org)s AND id = %(id)s
"""
BATCH_MESSAGES = """
SELECT {columns} FROM messages m JOIN batch_runs br ON br.run_id = m.run_id
WHERE br.batch_id = {batch_id} AND m.organization_id = {org}
  AND ({agent_id}::text IS NULL OR m.agent_id = {agent_id})
  AND {cursor}
ORDER BY {order_by} LIMIT {limit}
"""


def delete(conn: Connection, org_id: str, batch_id: str) -> bool:
    """The batch's record gone (its runs stay, as runs of their agents)."""
    gone = conn.execute(
        "DELETE FROM batches WHERE organization_id = %s AND id = %s", (org_id, batch_id)
    )
    return gone.rowcount == 1


def create(conn: Connection, batch: Batch) -> None:
    conn.execute(INSERT_BATCH, batch.model_dump())
    conn.execute(INSERT_RUNS, {"batch_id": batch.id, "run_ids": batch.run_ids})


def get(conn: Connection, org_id: str, batch_id: str) -> Batch | None:
    query = SELECT_BATCH.format(org=sql.Literal(org_id), id=sql.Literal(batch_id))
    row = conn.execute(query).fetchone()
    return Batch.model_validate(row) if row else None


def list_running(
    conn: Connection,
    org_id: str,
    *,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[Batch]:
    """The batches still running (as Letta 0.16.1 lists them: created or running only)."""
    return filtered_page(
        conn,
        LIST_RUNNING,
        Batch,
        "batches",
        {"org": sql.Literal(org_id)},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


def cancel(conn: Connection, org_id: str, batch_id: str, now: datetime) -> None:
    conn.execute(CANCEL, {"org": org_id, "id": batch_id, "now": now})


def messages(
    conn: Connection,
    org_id: str,
    batch_id: str,
    *,
    agent_id: str | None,
    after: str | None,
    before: str | None,
    limit: int,
    order: Order,
) -> list[Message]:
    """The messages of the batch's runs; the cursors are message ids, in the order asked."""
    direction = "asc" if order == "asc" else "desc"
    cursor = _message_cursor(org_id, after, before, direction)
    query = sql.SQL(BATCH_MESSAGES).format(
        columns=sql.SQL(", ".join(f"m.{c.strip()}" for c in MESSAGE_COLUMNS.split(","))),
        batch_id=sql.Literal(batch_id),
        org=sql.Literal(org_id),
        agent_id=sql.Literal(agent_id),
        cursor=cursor,
        order_by=sql.SQL("m.sequence_id ASC" if direction == "asc" else "m.sequence_id DESC"),
        limit=sql.Literal(limit),
    )
    return [Message.model_validate(r) for r in conn.execute(query).fetchall()]


def _message_cursor(
    org_id: str, after: str | None, before: str | None, direction: str
) -> sql.Composable:
    parts: list[sql.Composable] = []
    for cursor, later in ((after, True), (before, False)):
        if cursor is None:
            continue
        op = ">" if later == (direction == "asc") else "<"
        parts.append(
            sql.SQL(
                "m.sequence_id {op} (SELECT sequence_id FROM messages WHERE organization_id = {org}"
                " AND id = {id})"
            ).format(op=sql.SQL(op), org=sql.Literal(org_id), id=sql.Literal(cursor))
        )
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("TRUE")
