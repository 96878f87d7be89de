"""Runs: their start (with the first step's claim), status, approval waits, metrics and end."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from cairn.domain.runs import OutboxCommand, Run
from cairn.store import claim as claims
from cairn.store.db import Connection, pipeline
from cairn.store.limits import SPENT
from cairn.store.rows import Order, delete_with_rows, from_row, page, to_params
from cairn.store.sql_text import Native

RUN_JSON = ("metadata", "request_config", "usage", "error")


INSERT_RUN = """
INSERT INTO runs (id, organization_id, agent_id, status, stop_reason, background, metadata,
                  request_config, usage, error, callback_url, created_at, updated_at)
VALUES (%(id)s, %(organization_id)s, %(agent_id)s, %(status)s, %(stop_reason)s, %(background)s,
        %(metadata)s, %(request_config)s, %(usage)s, %(error)s, %(callback_url)s,
        %(created_at)s, %(updated_at)s)
RETURNING *
"""


# A run and its first step command, in one statement (one round trip), unless the agent's
# last message says otherwise: a pending approval accepts only an answer, and an answer
# needs a pending approval. `sent` marks the command published when the caller runs the
# step itself. Returns nothing for an unknown agent.
#
# A user's send to an agent that coalesces (`cairn_coalesce_seconds` in its metadata, and
# `coalesce` asked by the caller) joins the agent's newest run still waiting for its first
# step instead: its inputs are appended to that run's. The gate is an UPDATE of that step's
# command where it was never claimed: a claim committed since this statement's snapshot
# is seen there (PostgreSQL re-reads a row updated meanwhile), so no input joins a run whose
# first step has read its inputs. A claim that waited for this statement's lock on the agent
# read the run before the append: the step reads the inputs again (run/steps/step.py). A new
# run of a coalescing agent holds its first step until `coalesce_until` (store/claim.py).
START_RUN = """
WITH agent AS (
    SELECT a.id, (SELECT e.message_id FROM context_entries e WHERE e.agent_id = a.id
                  ORDER BY e.position DESC LIMIT 1) AS last_id,
           CASE WHEN %(coalesce)s AND jsonb_typeof(a.metadata -> 'cairn_coalesce_seconds')
                     = 'number'
                -- At most MAX_COALESCE_SECONDS (domain/agents.py), however it was written.
                THEN least((a.metadata ->> 'cairn_coalesce_seconds')::float8, 10) ELSE 0
           END AS hold_seconds
    FROM agents a
    WHERE a.organization_id = %(organization_id)s AND a.id = %(agent_id)s
      -- A start claiming its step takes its organization's lock before the agent row, as
      -- every claim does (migrations 0020, 0044).
      AND (NOT %(org_lock)s OR cairn_org_lock(a.organization_id))
    FOR UPDATE
), spent AS (
    -- A spent monthly budget starts no run, takes no answer, joins no input (migration 0037).
    SELECT {spent} AS budget
), last AS (
    SELECT m.id, m.run_id, m.role = 'approval' AND m.tool_calls IS NOT NULL AS pending
    FROM agent JOIN messages m ON m.id = agent.last_id
), waiting AS (
    SELECT r.id, r.approval_task_token AS token FROM runs r JOIN last ON r.id = last.run_id
    WHERE last.pending
), answered AS (
    -- The one answer a request takes; the row lock makes a concurrent second answer miss.
    UPDATE runs r SET approval_answered_by = %(id)s, approval_task_token = NULL
    FROM waiting
    WHERE %(answering)s AND r.id = waiting.id AND r.approval_answered_by IS NULL
      AND (SELECT budget FROM spent) IS NULL
    RETURNING waiting.token
), allowed AS (
    SELECT 1 FROM agent
    WHERE (SELECT budget FROM spent) IS NULL
      AND CASE WHEN %(answering)s THEN EXISTS (SELECT 1 FROM answered)
               ELSE NOT coalesce((SELECT pending FROM last), false) END
), joinable AS (
    -- The agent's newest run not ended, if it coalesces: never an older one, whose turn
    -- would then take this message before those of the newer run.
    SELECT newest.id FROM (
        SELECT r.id, r.request_config FROM agent, allowed, runs r
        WHERE agent.hold_seconds > 0 AND NOT %(answering)s
          AND r.organization_id = %(organization_id)s AND r.agent_id = agent.id
          AND r.status IN ('created', 'running')
        ORDER BY r.created_at DESC, r.id DESC LIMIT 1
    ) newest
    WHERE newest.request_config ? 'coalesce_until'
), gate AS (
    UPDATE outbox o SET claims = o.claims FROM joinable
    WHERE o.organization_id = %(organization_id)s AND o.dedup_key = joinable.id || ':0'
      AND o.claims = 0
    RETURNING o.run_id
), joined AS (
    -- The inputs were stamped with the run this send would have started: now they are
    -- the joined run's.
    UPDATE runs r SET request_config = jsonb_set(r.request_config, '{input}',
                          (r.request_config -> 'input') || (
                              SELECT jsonb_agg(m || jsonb_build_object('run_id', r.id)
                                               ORDER BY n)
                              FROM jsonb_array_elements(%(inputs)s) WITH ORDINALITY e(m, n))),
                      updated_at = now()
    FROM gate WHERE r.id = gate.run_id AND r.status = 'created'
    RETURNING r.*
), run AS (
    INSERT INTO runs (id, organization_id, agent_id, status, stop_reason, background, metadata,
                      request_config, usage, error, callback_url, task_token, created_at,
                      updated_at)
    SELECT %(id)s, %(organization_id)s, %(agent_id)s, %(status)s, %(stop_reason)s,
           %(background)s, %(metadata)s,
           CASE WHEN agent.hold_seconds > 0 AND NOT %(answering)s
                THEN %(request_config)s || jsonb_build_object(
                    'coalesce_until', now() + make_interval(secs => agent.hold_seconds))
                ELSE %(request_config)s END,
           %(usage)s, %(error)s, %(callback_url)s, %(task_token)s, %(created_at)s,
           %(updated_at)s
    FROM allowed, agent
    WHERE NOT EXISTS (SELECT 1 FROM joined)
    RETURNING id, request_config
), command AS (
    INSERT INTO outbox (organization_id, agent_id, run_id, kind, payload, dedup_key,
                        created_at, sent_at)
    SELECT %(organization_id)s, %(agent_id)s, run.id, 'step', %(payload)s, %(dedup_key)s,
           %(created_at)s, CASE WHEN %(sent)s THEN clock_timestamp() END
    FROM run
    RETURNING *
)
SELECT (SELECT count(*) FROM agent) AS found,
       (SELECT id FROM last WHERE pending) AS pending_id,
       (SELECT to_jsonb(command) FROM command) AS command,
       (SELECT token FROM answered) AS approval_token,
       (SELECT to_jsonb(joined) FROM joined) AS joined,
       (SELECT request_config ->> 'coalesce_until' FROM run) AS coalesce_until,
       (SELECT budget FROM spent) AS spent
""".replace("{spent}", SPENT.format(org="%(organization_id)s"))
_START_RUN = Native.of(START_RUN)
# Also a function (migration 0049), for connections that prepare nothing (behind RDS Proxy):
# its plan cost PostgreSQL about 0.5 ms each run (store/claim.py, CLAIMING, says why).
STARTING = _START_RUN.served(
    "cairn_start_run",
    (
        "boolean", "text", "text", "boolean", "text", "boolean", "jsonb", "text", "text",
        "boolean", "jsonb", "jsonb", "jsonb", "jsonb", "text", "text",
        "timestamp with time zone", "timestamp with time zone", "jsonb", "text", "boolean",
    ),
)  # fmt: skip


UPDATE_RUN = """
UPDATE runs SET
    status = %(status)s, stop_reason = %(stop_reason)s, metadata = %(metadata)s,
    usage = %(usage)s, error = %(error)s, callback_sent_at = %(callback_sent_at)s,
    callback_status_code = %(callback_status_code)s, callback_error = %(callback_error)s,
    approval_task_token = %(approval_task_token)s, task_token = %(task_token)s,
    ttft_ns = %(ttft_ns)s,
    total_duration_ns = %(total_duration_ns)s, completed_at = %(completed_at)s,
    updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
RETURNING *
"""


# An approval workflow's token, kept where the approval API finds it; refused once the
# request is answered or the run cancelled.
REGISTER_APPROVAL_WAIT = """
UPDATE runs SET approval_task_token = %(token)s, updated_at = now()
WHERE organization_id = %(org)s AND id = %(id)s
  AND approval_answered_by IS NULL AND status <> 'cancelled'
RETURNING id
"""


# A workflow item re-sent after a crash waits on a new token for the run the first started.
SET_TASK_TOKEN = """
UPDATE runs SET task_token = %(token)s, updated_at = now()
WHERE organization_id = %(org)s AND id = %(id)s
"""


# Cancelling ends the waits: the runs are cancelled and their tokens handed back for failing.
CANCEL_APPROVAL_WAITS = """
WITH waiting AS (
    SELECT id, approval_task_token AS token FROM runs
    WHERE organization_id = %(org)s AND agent_id = %(agent_id)s
      AND approval_task_token IS NOT NULL AND approval_answered_by IS NULL
    FOR UPDATE
)
UPDATE runs r SET status = 'cancelled', stop_reason = 'cancelled',
    approval_task_token = NULL, updated_at = now()
FROM waiting WHERE r.id = waiting.id
RETURNING r.id, waiting.token
"""


SELECT_RUN = "SELECT * FROM runs WHERE organization_id = %(org)s AND id = %(id)s"


SELECT_ACTIVE_RUNS = """
SELECT * FROM runs
WHERE organization_id = %(org)s AND agent_id = %(agent_id)s AND status IN ('created', 'running')
ORDER BY created_at, id
"""


def start_run(
    conn: Connection,
    run: Run,
    first: OutboxCommand,
    *,
    answering: bool,
    claim_lease_seconds: float | None,
    claim_cap: int = 0,
    coalesce: bool = False,
) -> tuple[dict[str, Any], claims.Claim | None]:
    """Record a run and its first step command in one statement; with a lease, also claim
    that step in the same round trip (one implicit transaction up to the pipeline's sync,
    so the claim sees the run). `coalesce`: the send may join a waiting run of a coalescing
    agent. Returns START_RUN's row and the claim."""
    params = {
        **to_params(run, RUN_JSON),
        "answering": answering,
        "coalesce": coalesce,
        "inputs": Jsonb(run.request_config.get("input") or []),
        "payload": Jsonb(first.payload),
        "dedup_key": first.dedup_key,
        "sent": claim_lease_seconds is not None,
        "org_lock": claim_lease_seconds is not None and claim_cap > 0,
    }
    if claim_lease_seconds is None:
        row = STARTING.execute(conn, params).fetchone()
        assert row is not None
        return row, None
    with pipeline(conn):
        started = STARTING.execute(conn, params)
        claiming = claims.send(
            conn,
            run.organization_id,
            run.id,
            0,
            lease_seconds=claim_lease_seconds,
            cap=claim_cap,
            lock_held=params["org_lock"],
            agent_id=run.agent_id,
        )
    row = started.fetchone()
    assert row is not None
    return row, claims.read(claiming)


def create_run(conn: Connection, run: Run) -> Run:
    return Run.model_validate(conn.execute(INSERT_RUN, to_params(run, RUN_JSON)).fetchone())


def get_run(conn: Connection, org_id: str, run_id: str) -> Run | None:
    return from_row(Run, conn.execute(SELECT_RUN, {"org": org_id, "id": run_id}).fetchone())


def update_run(conn: Connection, run: Run) -> Run | None:
    return from_row(Run, conn.execute(UPDATE_RUN, to_params(run, RUN_JSON)).fetchone())


def register_approval_wait(conn: Connection, org_id: str, run_id: str, token: str) -> bool:
    params = {"org": org_id, "id": run_id, "token": token}
    return conn.execute(REGISTER_APPROVAL_WAIT, params).fetchone() is not None


def cancel_approval_waits(conn: Connection, org_id: str, agent_id: str) -> list[tuple[str, str]]:
    """(run id, task token) of each approval wait of the agent, now cancelled."""
    rows = conn.execute(CANCEL_APPROVAL_WAITS, {"org": org_id, "agent_id": agent_id}).fetchall()
    return [(row["id"], row["token"]) for row in rows]


def active_runs(conn: Connection, org_id: str, agent_id: str) -> list[Run]:
    rows = conn.execute(SELECT_ACTIVE_RUNS, {"org": org_id, "agent_id": agent_id}).fetchall()
    return [Run.model_validate(r) for r in rows]


def list_runs(
    conn: Connection,
    org_id: str,
    *,
    agent_ids: list[str] | None = None,
    statuses: list[str] | None = None,
    background: bool | None = None,
    stop_reason: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 100,
    order: Order = "desc",
) -> list[Run]:
    return page(
        conn,
        "runs",
        Run,
        org_id,
        equals={"background": background, "stop_reason": stop_reason},
        any_of={"agent_id": agent_ids, "status": statuses},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


DELETE_ENDED_RUN = """
DELETE FROM runs WHERE organization_id = %(org)s AND id = %(id)s
  AND status IN ('completed', 'failed', 'cancelled')
"""


# What no key removes with the run (migration 0042), each after the run's row.
DELETE_RUN_ROWS = (
    "DELETE FROM steps WHERE run_id = %(id)s",
    "DELETE FROM outbox WHERE run_id = %(id)s",
)


def delete_ended(conn: Connection, org_id: str, run_id: str) -> bool:
    """Delete a run that has ended, with its steps, journal and outbox rows (the messages
    it produced stay in the agent's history). False if it is still going."""
    return delete_with_rows(conn, DELETE_ENDED_RUN, DELETE_RUN_ROWS, {"org": org_id, "id": run_id})


# Letta's RunMetrics: how many steps, and which of the organization's tools were called.
RUN_METRICS = """
SELECT (SELECT count(*) FROM steps s WHERE s.run_id = %(run_id)s) AS num_steps,
       ARRAY(SELECT DISTINCT t.id
             FROM messages m
             CROSS JOIN LATERAL jsonb_array_elements(m.tool_calls) AS c(call)
             JOIN tools t ON t.organization_id = m.organization_id
                         AND t.name = c.call -> 'function' ->> 'name'
             WHERE m.run_id = %(run_id)s AND m.organization_id = %(org)s
               AND jsonb_typeof(m.tool_calls) = 'array'
             ORDER BY t.id) AS tools_used
"""


def run_metrics(conn: Connection, org_id: str, run_id: str) -> tuple[int, list[str]]:
    row = conn.execute(RUN_METRICS, {"org": org_id, "run_id": run_id}).fetchone()
    assert row is not None
    return int(row["num_steps"]), list(row["tools_used"])


def set_task_token(conn: Connection, org_id: str, run_id: str, token: str) -> None:
    conn.execute(SET_TASK_TOKEN, {"org": org_id, "id": run_id, "token": token})
