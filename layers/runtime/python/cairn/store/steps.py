"""Steps: their rows (one per step that committed), the feedback people give them and
the provider traces kept of them."""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from cairn.domain.runs import Step
from cairn.store.db import Connection
from cairn.store.rows import Order, from_row, page, to_params
from cairn.store.sql_text import Native

INSERT_STEP = """
INSERT INTO steps (id, organization_id, run_id, agent_id, step_index, kind, status, stop_reason,
                   provider_name, model, model_endpoint, context_window_limit, prompt_tokens,
                   completion_tokens, total_tokens, cached_input_tokens, cache_write_tokens,
                   reasoning_tokens, tool_calls, error, started_at, completed_at, created_at,
                   llm_request_ns, tool_execution_ns)
VALUES (%(id)s, %(organization_id)s, %(run_id)s, %(agent_id)s, %(step_index)s, %(kind)s,
        %(status)s, %(stop_reason)s, %(provider_name)s, %(model)s, %(model_endpoint)s,
        %(context_window_limit)s, %(prompt_tokens)s, %(completion_tokens)s, %(total_tokens)s,
        %(cached_input_tokens)s, %(cache_write_tokens)s, %(reasoning_tokens)s, %(tool_calls)s,
        %(error)s, %(started_at)s, %(completed_at)s, %(created_at)s, %(llm_request_ns)s,
        %(tool_execution_ns)s)
ON CONFLICT (run_id, step_index) DO NOTHING
RETURNING *
"""
# Planned on every step behind RDS Proxy, about 0.04 ms: a function too (migration 0051).
# Its result is the table's row: a column added to the table needs the function again.
INSERTING_STEP = Native.of(INSERT_STEP).served(
    "cairn_insert_step",
    (
        "text", "text", "text", "text", "integer", "text", "text", "text", "text", "text",
        "text", "integer", "integer", "integer", "integer", "integer", "integer", "integer",
        "integer", "jsonb", "timestamp with time zone", "timestamp with time zone",
        "timestamp with time zone", "bigint", "bigint",
    ),
)  # fmt: skip


SELECT_STEP = "SELECT * FROM steps WHERE organization_id = %(org)s AND id = %(id)s"


SELECT_STEP_AT = """
SELECT * FROM steps
WHERE organization_id = %(org)s AND run_id = %(run_id)s AND step_index = %(step_index)s
"""


def record_step(conn: Connection, step: Step) -> Step | None:
    """Insert the step row; None when (run_id, step_index) was already recorded (a redelivery)."""
    return from_row(Step, INSERTING_STEP.execute(conn, to_params(step, ("error",))).fetchone())


def get_step(conn: Connection, org_id: str, step_id: str) -> Step | None:
    return from_row(Step, conn.execute(SELECT_STEP, {"org": org_id, "id": step_id}).fetchone())


def step_at(conn: Connection, org_id: str, run_id: str, step_index: int) -> Step | None:
    row = conn.execute(
        SELECT_STEP_AT, {"org": org_id, "run_id": run_id, "step_index": step_index}
    ).fetchone()
    return from_row(Step, row)


def list_steps(
    conn: Connection,
    org_id: str,
    run_id: str | None = None,
    *,
    agent_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 100,
    order: Order = "asc",
) -> list[Step]:
    """A page of steps: one run's, one agent's, or the organisation's."""
    return page(
        conn,
        "steps",
        Step,
        org_id,
        equals={"run_id": run_id, "agent_id": agent_id},
        after=after,
        before=before,
        limit=limit,
        order=order,
    )


SET_FEEDBACK = """
UPDATE steps SET feedback = %(feedback)s, tags = COALESCE(%(tags)s, tags)
WHERE organization_id = %(org)s AND id = %(id)s
RETURNING *
"""


SET_TID = """
UPDATE steps SET tid = %(tid)s WHERE organization_id = %(org)s AND id = %(id)s RETURNING *
"""


def set_feedback(
    conn: Connection, org_id: str, step_id: str, feedback: str | None, tags: list[str] | None
) -> Step | None:
    """Letta's feedback route replaces the feedback (None clears it) and the tags if given."""
    params = {"org": org_id, "id": step_id, "feedback": feedback, "tags": tags}
    return from_row(Step, conn.execute(SET_FEEDBACK, params).fetchone())


def set_tid(conn: Connection, org_id: str, step_id: str, tid: str) -> Step | None:
    row = conn.execute(SET_TID, {"org": org_id, "id": step_id, "tid": tid}).fetchone()
    return from_row(Step, row)


INSERT_TRACE = """
INSERT INTO provider_traces (step_id, organization_id, request_json, response_json, created_at)
SELECT %(step_id)s, %(org)s, %(request)s, %(response)s, %(created_at)s
-- A duplicate delivery's step row was not written: its trace is not either (no FK error).
WHERE EXISTS (SELECT 1 FROM steps WHERE id = %(step_id)s)
ON CONFLICT (step_id) DO NOTHING
"""


def trace_params(step: Step, request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {
        "step_id": step.id,
        "org": step.organization_id,
        "request": Jsonb(request),
        "response": Jsonb(response),
        "created_at": step.created_at,
    }


SELECT_TRACE = """
SELECT * FROM provider_traces WHERE organization_id = %(org)s AND step_id = %(step_id)s
"""


def get_trace(conn: Connection, org_id: str, step_id: str) -> dict[str, Any] | None:
    row = conn.execute(SELECT_TRACE, {"org": org_id, "step_id": step_id}).fetchone()
    return None if row is None else dict(row)
