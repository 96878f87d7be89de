"""The outbox: continuations written in a checkpoint, published after commit."""

from __future__ import annotations

from cairn.domain.runs import OutboxCommand
from cairn.store.db import Connection
from cairn.store.limits import ORG_CAP
from cairn.store.rows import from_row, to_params
from cairn.store.sql_text import Native

# Keyed by its natural key: a retried checkpoint writes the same command once.
INSERT_COMMAND = """
INSERT INTO outbox (organization_id, agent_id, run_id, kind, payload, dedup_key, created_at)
VALUES (%(organization_id)s, %(agent_id)s, %(run_id)s, %(kind)s, %(payload)s, %(dedup_key)s,
        %(created_at)s)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING *
"""
SELECT_COMMAND = "SELECT * FROM outbox WHERE organization_id = %(org)s AND id = %(id)s"
# Only the attempt that was published: a worker may take the message, find the agent busy
# and put the row back to wait (MARK_UNSENT, a new attempt) before the publisher gets here;
# marking it sent then would leave it in neither the queue nor the waiting steps.
MARK_SENT = """
UPDATE outbox SET sent_at = now(), attempts = attempts + 1, last_error = NULL
WHERE organization_id = %(org)s AND id = %(id)s AND sent_at IS NULL
  AND (%(attempts)s::int IS NULL OR attempts = %(attempts)s::int)
"""
MARK_FAILED = """
UPDATE outbox SET attempts = attempts + 1, last_error = %(error)s
WHERE organization_id = %(org)s AND id = %(id)s
"""
# Across organizations on purpose: the sweeper is the system's own worker, not a tenant's.
# SKIP LOCKED lets two sweepers share the backlog without publishing a row twice at once.
CLAIM_UNSENT = """
SELECT * FROM outbox
WHERE sent_at IS NULL AND created_at <= clock_timestamp() - make_interval(secs => %(older_than)s)
ORDER BY created_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
"""


def add(conn: Connection, command: OutboxCommand) -> OutboxCommand | None:
    """Write a command; None if one with the same dedup_key exists already."""
    params = to_params(command, ("payload",))
    return from_row(OutboxCommand, conn.execute(INSERT_COMMAND, params).fetchone())


def get(conn: Connection, org_id: str, command_id: int) -> OutboxCommand | None:
    row = conn.execute(SELECT_COMMAND, {"org": org_id, "id": command_id}).fetchone()
    return from_row(OutboxCommand, row)


def mark_sent(conn: Connection, org_id: str, command_id: int, attempts: int | None = None) -> bool:
    """Mark a published command sent; `attempts`: the attempt it was published as (a row
    put back to wait since is not marked)."""
    params = {"org": org_id, "id": command_id, "attempts": attempts}
    return conn.execute(MARK_SENT, params).rowcount == 1


MARK_ALL_SENT = """
UPDATE outbox o SET sent_at = now(), attempts = o.attempts + 1, last_error = NULL
FROM unnest(%(ids)s::bigint[], %(attempts)s::int[]) AS published(id, attempts)
WHERE o.organization_id = %(org)s AND o.id = published.id AND o.sent_at IS NULL
  AND o.attempts = published.attempts
"""


def mark_all_sent(conn: Connection, org_id: str, published: list[tuple[int, int]]) -> int:
    """Mark published commands sent, each given as (id, the attempt it was published as)."""
    ids, attempts = [i for i, _ in published], [a for _, a in published]
    return conn.execute(MARK_ALL_SENT, {"org": org_id, "ids": ids, "attempts": attempts}).rowcount


def mark_failed(conn: Connection, org_id: str, command_id: int, error: str) -> None:
    conn.execute(MARK_FAILED, {"org": org_id, "id": command_id, "error": error})


def claim_unsent(
    conn: Connection, *, older_than_seconds: float, limit: int = 100
) -> list[OutboxCommand]:
    """Unsent commands older than the given age, locked until the caller's transaction ends."""
    rows = conn.execute(CLAIM_UNSENT, {"older_than": older_than_seconds, "limit": limit}).fetchall()
    return [OutboxCommand.model_validate(r) for r in rows]


SELECT_BY_DEDUP_KEY = "SELECT * FROM outbox WHERE organization_id = %(org)s AND dedup_key = %(key)s"


def by_dedup_key(conn: Connection, org_id: str, dedup_key: str) -> OutboxCommand | None:
    row = conn.execute(SELECT_BY_DEDUP_KEY, {"org": org_id, "key": dedup_key}).fetchone()
    return from_row(OutboxCommand, row)


MARK_UNSENT = """
UPDATE outbox SET sent_at = NULL, attempts = attempts + 1
WHERE organization_id = %(org)s AND id = %(id)s
"""
UNSENT_FOR_AGENT = """
SELECT * FROM outbox
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND sent_at IS NULL
ORDER BY id
"""


def mark_unsent(conn: Connection, org_id: str, command_id: int) -> None:
    """Put a delivered command back to wait (its agent was busy); its agent's next release
    or the sweeper publishes it again."""
    conn.execute(MARK_UNSENT, {"org": org_id, "id": command_id})


# Steps of an organization's runs that wait for its share (CAIRN_ORG_MAX_RUNS) to free:
# as many as it has free (its cap less the agents its runs hold now), oldest first, only
# those whose agent no run holds (the others wait for their agent). One statement.
WAITING_IN_ORGANIZATION = """
WITH held AS (
    SELECT count(*) AS n FROM agents
    WHERE organization_id = %(org)s AND lease_run_id IS NOT NULL AND lease_expires_at >= now()
)
SELECT o.* FROM outbox o JOIN agents a ON a.organization_id = o.organization_id
                                      AND a.id = o.agent_id
WHERE o.organization_id = %(org)s AND o.sent_at IS NULL AND o.kind = 'step'
  AND (a.lease_run_id IS NULL OR a.lease_expires_at < now())
ORDER BY o.id
LIMIT greatest({ORG_CAP} - (SELECT n FROM held), 0)
""".replace("{ORG_CAP}", ORG_CAP)


# What a run's end frees, read by its checkpoint in one statement (after it let the agent
# go, in its transaction): the steps waiting for its agent, oldest first (the run's own
# commands are published by the step that wrote them), then those of the organization's
# other agents waiting for its share, as many as it has free. Each row taken is held until
# the checkpoint commits and skipped by others meanwhile: two runs of an organization ending
# at once each took the same waiting step and published it twice, and both deliveries ran
# its model call (the claim lets a run's own lease in again).
WAITING_FOR_RELEASE = """
WITH mine AS (
    SELECT * FROM outbox
    WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND sent_at IS NULL
      AND run_id IS DISTINCT FROM %(run)s
    FOR UPDATE SKIP LOCKED
), others AS (
    SELECT o.* FROM outbox o JOIN agents a ON a.organization_id = o.organization_id
                                          AND a.id = o.agent_id
    WHERE %(cap)s > 0 AND o.organization_id = %(org)s AND o.sent_at IS NULL AND o.kind = 'step'
      AND o.agent_id <> %(agent_id)s AND (a.lease_run_id IS NULL OR a.lease_expires_at < now())
    ORDER BY o.id
    LIMIT greatest({ORG_CAP} - (
        SELECT count(*) FROM agents
        WHERE organization_id = %(org)s AND lease_run_id IS NOT NULL
          AND lease_expires_at >= now()), 0)
    FOR UPDATE OF o SKIP LOCKED
)
(SELECT * FROM mine ORDER BY id) UNION ALL (SELECT * FROM others ORDER BY id)
""".replace("{ORG_CAP}", ORG_CAP)
# Behind RDS Proxy (no prepared statements) PostgreSQL planned this at every run's end, about
# 0.16 ms of its CPU: a function too, migration 0050 (store/sql_text.py; a change needs a new
# migration). Its result is the outbox's row: a column added to the outbox needs it again.
WAITING = Native.of(WAITING_FOR_RELEASE).served(
    "cairn_waiting_for_release", ("text", "text", "text", "integer")
)


def waiting_in_organization(conn: Connection, org_id: str, cap: int) -> list[OutboxCommand]:
    rows = conn.execute(WAITING_IN_ORGANIZATION, {"org": org_id, "cap": cap}).fetchall()
    return [OutboxCommand.model_validate(r) for r in rows]


def unsent_for_agent(conn: Connection, org_id: str, agent_id: str) -> list[OutboxCommand]:
    rows = conn.execute(UNSENT_FOR_AGENT, {"org": org_id, "agent_id": agent_id}).fetchall()
    return [OutboxCommand.model_validate(r) for r in rows]


# Oldest first and bounded, so a backlog drains over a few sweeps. An agent's newest
# sleeptime row stays: the next fan-out starts reading where it stopped.
PRUNE_SENT = """
DELETE FROM outbox WHERE id IN (
    SELECT o.id FROM outbox o
    WHERE o.sent_at < now() - make_interval(secs => %(seconds)s)
      AND NOT (o.kind = 'sleeptime' AND NOT EXISTS (
          SELECT 1 FROM outbox n
          WHERE n.agent_id = o.agent_id AND n.kind = 'sleeptime' AND n.id > o.id))
    ORDER BY o.sent_at
    LIMIT %(limit)s
)
"""


def prune_sent(conn: Connection, *, older_than_seconds: float, limit: int = 5000) -> int:
    """Delete rows sent more than `older_than_seconds` ago; returns how many went."""
    params = {"seconds": older_than_seconds, "limit": limit}
    return conn.execute(PRUNE_SENT, params).rowcount


# The latest step command of each unfinished run, sent more than `stall` seconds ago with
# no step recorded for it since: its queue message was lost or its worker died. Across
# organizations, like the sweep. A run is unfinished from its start to its end, and every
# checkpoint moves `updated_at`, so a run still stepping is never picked.
STALLED_STEPS = """
SELECT o.* FROM runs r
CROSS JOIN LATERAL (
    SELECT * FROM outbox o WHERE o.run_id = r.id AND o.kind = 'step' ORDER BY o.id DESC LIMIT 1
) o
WHERE r.status IN ('created', 'running')
  AND r.updated_at <= clock_timestamp() - make_interval(secs => %(stall)s)
  AND o.sent_at <= clock_timestamp() - make_interval(secs => %(stall)s)
  AND o.id > %(after)s
  AND NOT EXISTS (SELECT 1 FROM steps s
                  WHERE s.run_id = r.id AND s.step_index = (o.payload ->> 'step_index')::int)
ORDER BY o.id
LIMIT %(limit)s
"""
# Counted only if nobody re-sent it meanwhile (two sweepers agree on one re-drive); a
# restart's re-send (`counted` false) only marks it sent again, once (the sent time seen).
MARK_REDRIVEN = """
UPDATE outbox SET redrives = redrives + %(count)s, attempts = attempts + 1, sent_at = now()
WHERE organization_id = %(org)s AND id = %(id)s AND redrives = %(seen)s
  AND sent_at IS NOT DISTINCT FROM %(sent)s
RETURNING *
"""
# What the local stack's in-memory services held when the process died: approval waits
# whose request is still unanswered, and each agent's newest sleeptime fan-out that never
# recorded its end (`groups.last_processed_message_id` short of the row's `upto`).
LOST_WORKFLOWS = """
SELECT o.* FROM outbox o JOIN runs r ON r.id = o.run_id
WHERE o.kind = 'approval_wait' AND o.sent_at IS NOT NULL
  AND r.stop_reason = 'requires_approval' AND r.status = 'completed'
  AND r.approval_answered_by IS NULL
UNION ALL
SELECT o.* FROM outbox o JOIN groups g ON g.id = o.payload ->> 'group_id'
WHERE o.kind = 'sleeptime' AND o.sent_at IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM outbox n
                  WHERE n.agent_id = o.agent_id AND n.kind = 'sleeptime' AND n.id > o.id)
  AND g.last_processed_message_id IS DISTINCT FROM o.payload ->> 'upto_message_id'
"""


def stalled_steps(
    conn: Connection, *, stall_seconds: float, limit: int = 100, after: int = 0
) -> list[OutboxCommand]:
    """A page of stalled steps, by outbox id after `after` (so every page is new)."""
    params = {"stall": stall_seconds, "limit": limit, "after": after}
    return [OutboxCommand.model_validate(r) for r in conn.execute(STALLED_STEPS, params)]


def mark_redriven(
    conn: Connection, command: OutboxCommand, *, counted: bool = True
) -> OutboxCommand | None:
    """Count a re-drive of `command` as read; None if another sweeper re-sent it first."""
    assert command.id is not None
    params = {
        "org": command.organization_id,
        "id": command.id,
        "seen": command.redrives,
        "sent": command.sent_at,
        "count": 1 if counted else 0,
    }
    return from_row(OutboxCommand, conn.execute(MARK_REDRIVEN, params).fetchone())


def lost_workflows(conn: Connection) -> list[OutboxCommand]:
    return [OutboxCommand.model_validate(r) for r in conn.execute(LOST_WORKFLOWS).fetchall()]
