"""The checkpoint: everything a step produced, written in one transaction or not at all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from psycopg.pq import TransactionStatus

from cairn import faults
from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.folders import FileAgent
from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.domain.runs import OutboxCommand, Run, Step
from cairn.errors import VersionConflictError
from cairn.store import (
    archives,
    blocks,
    context,
    files,
    history,
    limits,
    messages,
    outbox,
    steps,
)
from cairn.store.db import Connection, Database, pipeline
from cairn.store.rows import to_params
from cairn.store.sql_text import Native


class AlreadyCommitted(Exception):
    """Another delivery of this step committed first; this one's work is discarded."""


@dataclass
class Checkpoint:
    agent: Agent  # as loaded; its version is the one the write must still find
    run: Run  # with status, stop reason and usage as they stand after this step
    step: Step
    new_messages: list[Message] = field(default_factory=list)
    # The context window: where its entries stood when the step read them (with
    # agent.message_ids), and the window the step leaves.
    context_positions: list[int] = field(default_factory=list)
    message_ids: list[str] = field(default_factory=list)
    system_rewrite: Message | None = None
    created_blocks: list[Block] = field(default_factory=list)
    updated_blocks: list[Block] = field(default_factory=list)  # version = the one read
    deleted_blocks: list[Block] = field(default_factory=list)
    new_archive: Archive | None = None
    passages: list[Passage] = field(default_factory=list)
    # The agent's views of files the file tools opened, closed or touched.
    file_views: list[FileAgent] = field(default_factory=list)
    next_command: OutboxCommand | None = None
    # Published after commit besides the continuation: the approval wait, a workflow item's
    # result. (Embedding jobs need no row: run/steps/step.py, `_embed_job`.)
    commands: list[OutboxCommand] = field(default_factory=list)
    # A foreground turn of an agent with sleeptime ended: count it, maybe start the fan-out.
    sleeptime_turn: bool = False
    context_tokens: int | None = None
    context_tokens_upto: int | None = None
    # The provider request and response of this step (CAIRN_PROVIDER_TRACES), kept with it.
    trace: tuple[dict[str, Any], dict[str, Any]] | None = None
    # The step's model call at the operator's prices (cairn/prices.py), for the month's total.
    cost_usd: float = 0.0


# The statements below only write; every check reads its result after all were sent. In
# pipeline mode with BEGIN and COMMIT sent by hand the checkpoint costs two round trips
# (everything up to the checks, then COMMIT); psycopg's transaction() block adds three
# syncs of its own, and one statement at a time cost ten (bench/step_overhead.py).
FINISH_RUN = """
UPDATE runs SET
    status = CASE WHEN status = 'cancelled' THEN status ELSE %(status)s END,
    stop_reason = CASE WHEN status = 'cancelled' THEN 'cancelled' ELSE %(stop_reason)s END,
    error = CASE WHEN status = 'cancelled' THEN error ELSE %(error)s END,
    completed_at = CASE WHEN status = 'cancelled' THEN coalesce(completed_at, %(now)s)
                        ELSE %(completed_at)s END,
    usage = %(usage)s, total_duration_ns = %(total_duration_ns)s, updated_at = now()
WHERE organization_id = %(organization_id)s AND id = %(id)s
RETURNING status, stop_reason
"""
# Planned on every step behind RDS Proxy, about 0.07 ms: a function too (migration 0051).
FINISHING_RUN = Native.of(FINISH_RUN).served(
    "cairn_finish_run",
    (
        "text", "text", "jsonb", "timestamp with time zone", "timestamp with time zone",
        "jsonb", "bigint", "text", "text",
    ),
)  # fmt: skip
# A cancel that landed while the step ran wins: the continuation is not written.
ADD_NEXT = """
WITH ins AS (
    INSERT INTO outbox (organization_id, agent_id, run_id, kind, payload, dedup_key, created_at)
    SELECT %(organization_id)s, %(agent_id)s, %(run_id)s, %(kind)s, %(payload)s, %(dedup_key)s,
           %(created_at)s
    WHERE EXISTS (SELECT 1 FROM runs WHERE id = %(run_id)s AND status = 'running')
    ON CONFLICT (dedup_key) DO NOTHING
    RETURNING *
)
SELECT * FROM ins
UNION ALL
SELECT * FROM outbox WHERE dedup_key = %(dedup_key)s AND NOT EXISTS (SELECT 1 FROM ins)
  AND EXISTS (SELECT 1 FROM runs WHERE id = %(run_id)s AND status = 'running')
"""
ADD_COMMAND = """
INSERT INTO outbox (organization_id, agent_id, run_id, kind, payload, dedup_key, created_at)
VALUES (%(organization_id)s, %(agent_id)s, %(run_id)s, %(kind)s, %(payload)s, %(dedup_key)s,
        %(created_at)s)
ON CONFLICT (dedup_key) DO NOTHING
RETURNING *
"""
# Letta's counter: (turns + 1) mod frequency, starting at -1, so the first turn triggers.
SLEEPTIME_TURN = """
WITH g AS (
    UPDATE groups SET turns_counter = (turns_counter + 1) %% sleeptime_agent_frequency,
                      updated_at = now()
    WHERE organization_id = %(org)s AND manager_agent_id = %(agent_id)s
      AND manager_type = 'sleeptime' AND sleeptime_agent_frequency IS NOT NULL
    RETURNING id, turns_counter, last_processed_message_id
)
INSERT INTO outbox (organization_id, agent_id, run_id, kind, payload, dedup_key, created_at)
SELECT %(org)s, %(agent_id)s, %(run_id)s, 'sleeptime',
       jsonb_build_object(
           'organization_id', %(org)s, 'group_id', g.id, 'agent_id', %(agent_id)s,
           'upto_message_id', %(upto)s::text,
           -- where the previous fan-out stopped, finished or not (so none reads a line twice)
           'after_message_id', coalesce(
               (SELECT o.payload->>'upto_message_id' FROM outbox o
                WHERE o.agent_id = %(agent_id)s AND o.kind = 'sleeptime'
                ORDER BY o.id DESC LIMIT 1),
               g.last_processed_message_id)),
       'sleeptime:' || g.id || ':' || %(run_id)s, %(now)s
FROM g WHERE g.turns_counter = 0
ON CONFLICT (dedup_key) DO NOTHING
RETURNING *
"""
# What a step changes of its agent, and nothing else (the agent's other columns are the
# API's), with the lease let go once the run has ended, by this step or by a cancel that won
# meanwhile (FINISH_RUN ran before it in this transaction): one write of the agent row,
# since each further one in a transaction checks its organization key again.
CHECKPOINT_AGENT = """
UPDATE agents SET
    context_tokens = %(context_tokens)s, context_tokens_upto = %(context_tokens_upto)s,
    last_stop_reason = CASE WHEN %(ended)s THEN %(last_stop_reason)s ELSE last_stop_reason END,
    last_run_completion = CASE WHEN %(ended)s THEN %(now)s ELSE last_run_completion END,
    version = version + 1, updated_at = now(),
    (lease_run_id, lease_expires_at) = (
        SELECT CASE WHEN done THEN NULL ELSE lease_run_id END,
               CASE WHEN done THEN NULL ELSE lease_expires_at END
        FROM (SELECT lease_run_id = %(run)s AND EXISTS (
                  SELECT 1 FROM runs WHERE id = %(run)s
                  AND status IN ('completed', 'failed', 'cancelled')) AS done) AS ended_run)
WHERE organization_id = %(org)s AND id = %(id)s AND version = %(expected_version)s
RETURNING id
"""
# Behind RDS Proxy (no prepared statements) PostgreSQL planned this on every step, about 0.09 ms of
# its CPU: a function too, migration 0050 (store/sql_text.py; a change needs a new migration).
CHECKPOINTING_AGENT = Native.of(CHECKPOINT_AGENT).served(
    "cairn_checkpoint_agent",
    (
        "integer", "integer", "boolean", "text", "timestamp with time zone", "text", "text",
        "text", "bigint",
    ),
)  # fmt: skip
DELETE_ORPHAN_BLOCK = """
DELETE FROM blocks b WHERE b.organization_id = %(org)s AND b.id = %(id)s
  AND NOT EXISTS (SELECT 1 FROM agents_blocks ab WHERE ab.block_id = b.id)
"""


class Committed(NamedTuple):
    next_command: OutboxCommand | None  # the continuation, to publish once committed
    commands: list[OutboxCommand]  # the other commands, likewise
    run: Run | None  # the run as the checkpoint left it; None if a cancel won meanwhile
    messages: list[Message]  # the step's new messages as stored (with sequence ids)
    # The run ended: steps of other runs waiting for the agent, then (with `org_cap`) those
    # waiting for their organization's share, as many as it has free.
    waiting: list[OutboxCommand]


def commit(db: Database, cp: Checkpoint, *, now: datetime, org_cap: int = 0) -> Committed:
    """Write the checkpoint and say what to publish once it is committed.

    Raises AlreadyCommitted for a duplicate delivery and VersionConflictError when the agent
    or a block changed since the step read it (the caller retries from fresh state).
    """
    run = cp.run
    ended = run.status in ("completed", "failed", "cancelled")
    with db.connection() as conn:
        try:
            with pipeline(conn) as pipelined:
                conn.execute("BEGIN")
                found = _write(conn, cp, ended=ended, now=now, org_cap=org_cap)
                pipelined.sync()
                result = found()
                faults.reached("inside_commit")
                conn.execute("COMMIT")
        except BaseException:
            # Nothing half-written: the pooled connection goes back without a transaction.
            if conn.info.transaction_status != TransactionStatus.IDLE:
                conn.rollback()
            raise
    return result


# Complexity: each branch is an optional statement of the one pipelined checkpoint
# transaction; the write order (the durability argument) reads in one place.
def _write(  # noqa: C901
    conn: Connection, cp: Checkpoint, *, ended: bool, now: datetime, org_cap: int
) -> Callable[[], Committed]:
    """Send every statement of the checkpoint; returns what checks and reads their results."""
    org, agent_id, run = cp.agent.organization_id, cp.agent.id, cp.run
    step_row = steps.INSERTING_STEP.execute(conn, to_params(cp.step, ("error",)))
    message_rows = (
        messages.INSERTING_MESSAGES.execute(conn, messages.batch_params(cp.new_messages))
        if cp.new_messages
        else None
    )
    if cp.trace is not None:
        conn.execute(steps.INSERT_TRACE, steps.trace_params(cp.step, *cp.trace))
    if cp.system_rewrite is not None:
        if message_rows is None:  # the agent's row first (the new messages' count took it)
            conn.execute(messages.MOVE_WINDOW, {"org": org, "agent_id": agent_id})
        conn.execute(messages.REWRITE_CONTENT, messages.rewrite_params(cp.system_rewrite))
    actor = {"actor_type": "agent", "actor_id": agent_id}
    for block in cp.created_blocks:
        conn.execute(blocks.INSERT_BLOCK, {**to_params(block, ("metadata",)), **actor})
        conn.execute(blocks.ATTACH_BLOCK, {"org": org, "agent_id": agent_id, "block_id": block.id})
    block_rows = [
        (
            block,
            conn.execute(
                blocks.UPDATE_BLOCK,
                {**to_params(block, ("metadata",)), **actor, "expected_version": block.version},
            ),
        )
        for block in cp.updated_blocks
    ]
    for block in cp.deleted_blocks:
        conn.execute(blocks.DETACH_BLOCK, {"org": org, "agent_id": agent_id, "block_id": block.id})
        conn.execute(DELETE_ORPHAN_BLOCK, {"org": org, "id": block.id})
    if cp.new_archive is not None:
        conn.execute(
            archives.INSERT_ARCHIVE, to_params(cp.new_archive, ("embedding_config", "metadata"))
        )
        conn.execute(
            archives.ATTACH_ARCHIVE,
            {
                "org": org,
                "archive_id": cp.new_archive.id,
                "agent_id": agent_id,
                "is_owner": True,
            },
        )
    for passage in cp.passages:
        conn.execute(archives.INSERT_PASSAGE, archives.passage_params(passage))
    for view in cp.file_views:
        conn.execute(files.PUT_VIEW, to_params(view))
    window = context.plan(
        list(zip(cp.context_positions, cp.agent.message_ids, strict=True)), cp.message_ids
    )
    version = cp.agent.version + 1  # the one CHECKPOINT_AGENT below writes, or nothing is
    if window:
        history.INSERTING_CHANGES.execute(
            conn, history.change_params(agent_id, version, window.removed, window.added)
        )
    if window.removed:
        conn.execute(
            context.DELETE_ENTRIES, {"agent_id": agent_id, "positions": window.positions_removed}
        )
    entry_rows = None
    if window.added:
        entry_rows = context.INSERTING_ENTRIES.execute(
            conn, context.entry_params(org, agent_id, window.added)
        )
    history.INSERTING_VERSION.execute(
        conn,
        history.version_params(
            org,
            agent_id,
            version,
            "step",
            step_id=cp.step.id,
            run_id=run.id,
            system_id=cp.system_rewrite.id if cp.system_rewrite is not None else None,
            passage_ids=[p.id for p in cp.passages],
        ),
    )
    run_row = FINISHING_RUN.execute(conn, {**to_params(run, ("usage", "error")), "now": now})
    agent_row = CHECKPOINTING_AGENT.execute(
        conn,
        {
            "org": org,
            "id": agent_id,
            "run": run.id,
            "expected_version": cp.agent.version,
            "context_tokens": cp.context_tokens,
            "context_tokens_upto": cp.context_tokens_upto,
            "ended": ended,
            "last_stop_reason": run.stop_reason,
            "now": now,
        },
    )
    next_row = None
    if cp.next_command is not None and not ended:
        next_row = conn.execute(ADD_NEXT, to_params(cp.next_command, ("payload",)))
    command_rows = [conn.execute(ADD_COMMAND, to_params(c, ("payload",))) for c in cp.commands]
    if cp.sleeptime_turn:
        upto = cp.message_ids[-1] if cp.message_ids else None
        params = {"org": org, "agent_id": agent_id, "run_id": run.id, "upto": upto, "now": now}
        command_rows.append(conn.execute(SLEEPTIME_TURN, params))
    # Read before COMMIT, while this transaction holds the agent row: a step deferred after
    # this read finds the lease settled and wakes itself (dispatch.after_step).
    waiting_rows = (
        outbox.WAITING.execute(
            conn, {"org": org, "agent_id": agent_id, "run": run.id, "cap": org_cap}
        )
        if ended
        else None
    )
    tokens = cp.step.prompt_tokens + cp.step.completion_tokens
    if tokens or cp.cost_usd:
        # Last, so the organization's month row is held only until the COMMIT that follows.
        limits.ADDING_TO_MONTH.execute(conn, {"org": org, "tokens": tokens, "cost": cp.cost_usd})

    def check() -> Committed:
        # A failed check raises before COMMIT is sent: the whole checkpoint rolls back.
        if step_row.fetchone() is None:
            raise AlreadyCommitted(f"{run.id} step {cp.step.step_index}")
        for block, row in block_rows:
            if row.fetchone() is None:
                raise VersionConflictError(f"Block {block.id} changed since it was read")
        if agent_row.fetchone() is None:
            raise VersionConflictError(f"Agent {agent_id} changed since it was read")
        if entry_rows is not None and len(entry_rows.fetchall()) != len(window.added):
            # A message of the window is gone (deleted since the step read it): start over.
            raise VersionConflictError(f"Agent {agent_id}'s context changed since it was read")
        final = run_row.fetchone()
        if final is None:
            # The run was deleted (only an ended one can be: a cancel won, then a delete):
            # nothing of this step is kept, as a key to the run refused it before (0042).
            raise AlreadyCommitted(f"{run.id} is gone")
        found = next_row.fetchone() if next_row is not None else None
        written = [got for rows in command_rows if (got := rows.fetchone()) is not None]
        as_written = final is not None and final["status"] == run.status
        # The step row was new, so every message was too: each has its sequence id here.
        stored = message_rows.fetchall() if message_rows is not None else []
        sequence = {r["id"]: r["sequence_id"] for r in stored}
        return Committed(
            None if found is None else OutboxCommand.model_validate(found),
            [OutboxCommand.model_validate(got) for got in written],
            run if as_written else None,
            [m.model_copy(update={"sequence_id": sequence.get(m.id)}) for m in cp.new_messages],
            [OutboxCommand.model_validate(r) for r in waiting_rows or ()],
        )

    return check
