"""Message batches (Letta's `/v1/messages/batches`): one message to each of many agents.

Letta 0.16.1 hands a batch's first model calls to a provider's batch API (Anthropic's)
and resumes the agents from a polling job. Cairn starts every request as a background
run at once, in one transaction, so a batch is all started or not at all; the runs go
through the step queue like any other, and the batch is running until all have ended.
"""

from __future__ import annotations

from cairn.domain.base import utc_now
from cairn.domain.batches import Batch
from cairn.domain.messages import Message
from cairn.domain.runs import RunOptions
from cairn.errors import found, not_found
from cairn.run.driving import lifecycle
from cairn.run.driving.dispatch import publish_all, wake
from cairn.run.driving.lifecycle import StartedRun
from cairn.run.runtime import Runtime
from cairn.services import messages as message_service
from cairn.services.pages import Page
from cairn.services.requests import CreateBatch
from cairn.store import agents, batches
from cairn.store.db import Connection


def create(rt: Runtime, org: str, user_id: str | None, req: CreateBatch) -> Batch:
    with rt.db.connection() as conn:
        wanted = list(dict.fromkeys(r.agent_id for r in req.requests))
        missing = [a for a in wanted if a not in agents.names(conn, org, wanted)]
    if missing:
        raise not_found(f"Agent(s) not found: {', '.join(missing)}")
    prepared = [(r, message_service.inputs(rt, org, r.agent_id, r)) for r in req.requests]
    batch = Batch(organization_id=org, created_by_id=user_id, callback_url=req.callback_url)
    started: list[StartedRun] = []
    with rt.db.transaction() as conn:
        for request, inputs in prepared:
            options = RunOptions(
                max_steps=request.max_steps,
                background=True,
                metadata={"run_type": "batch", "batch_id": batch.id},
            )
            started.append(
                lifecycle.start_run(
                    rt.db,
                    org,
                    request.agent_id,
                    inputs,
                    options,
                    conn=conn,
                    org_cap=rt.settings.org_max_runs,
                )
            )
        batch = batch.model_copy(update={"run_ids": [s.run.id for s in started]})
        batches.create(conn, batch)
    # All at once; a lost publish is delivered by the sweeper from the outbox.
    publish_all(rt.db, rt.queue, [run.command for run in started])
    return retrieve(rt, org, batch.id)


def _fetch(conn: Connection, org: str, batch_id: str) -> Batch:
    return found(batches.get(conn, org, batch_id), "Batch", batch_id)


def retrieve(rt: Runtime, org: str, batch_id: str) -> Batch:
    with rt.db.connection() as conn:
        return _fetch(conn, org, batch_id)


def list_running(
    rt: Runtime,
    org: str,
    *,
    page: Page,
) -> list[Batch]:
    with rt.db.connection() as conn:
        return batches.list_running(
            conn, org, after=page.after, before=page.before, limit=page.limit, order=page.order
        )


def delete(rt: Runtime, org: str, batch_id: str) -> Batch:
    """The batch's record deleted (Letta's delete_job); its runs stay, ended or going on."""
    with rt.db.transaction() as conn:
        batch = _fetch(conn, org, batch_id)
        batches.delete(conn, org, batch.id)
    return batch


def cancel(rt: Runtime, org: str, batch_id: str) -> None:
    """The batch is cancelled, and so is each of its runs still going; ended ones stay."""
    with rt.db.connection() as conn:
        batch = _fetch(conn, org, batch_id)
        batches.cancel(conn, org, batch.id, utc_now())
    for run_id in batch.run_ids:
        ended = rt.engine.fail_run(org, run_id, "cancelled", "batch cancelled")
        if ended is not None:
            wake(rt.db, rt.queue, org, ended.agent_id)


def messages(
    rt: Runtime,
    org: str,
    batch_id: str,
    *,
    agent_id: str | None,
    page: Page,
) -> list[Message]:
    with rt.db.connection() as conn:
        batch = _fetch(conn, org, batch_id)
        return batches.messages(
            conn,
            org,
            batch.id,
            agent_id=agent_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
