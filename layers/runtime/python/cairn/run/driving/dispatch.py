"""Publishing the continuation a checkpoint wrote, and republishing what a crash left behind."""

from __future__ import annotations

import logging

from cairn.domain.runs import OutboxCommand
from cairn.run import later
from cairn.run.ports import StepQueue
from cairn.run.steps.step import StepOutcome
from cairn.store import agents, outbox
from cairn.store.db import Database

logger = logging.getLogger(__name__)

# An unsent row younger than this may still be on its way from the step that wrote it.
SWEEP_AFTER_SECONDS = 30.0


def publish_and_mark(db: Database, queue: StepQueue, command: OutboxCommand) -> bool:
    """Publish after commit, then mark sent; a failure leaves the row for the sweeper."""
    try:
        queue.publish(command)
    except Exception as err:  # the queue being down must not fail the step that committed
        logger.warning("publishing %s failed: %s", command.dedup_key, err)
        if command.id is not None:
            with db.connection() as conn:
                outbox.mark_failed(conn, command.organization_id, command.id, str(err))
        return False
    if command.id is not None:
        with db.connection() as conn:
            outbox.mark_sent(conn, command.organization_id, command.id, command.attempts)
    return True


def publish_all(db: Database, queue: StepQueue, commands: list[OutboxCommand]) -> int:
    """Publish many step commands at once (a batch's runs): ten to an SQS request and one
    statement marking them sent, instead of a request and a round trip each (a batch of
    300 took 52 s). Queues without a batch publish take them one by one."""
    steps = getattr(queue, "steps", queue)
    many = getattr(steps, "publish_many", None)
    if many is None or any(c.kind != "step" for c in commands):
        return sum(publish_and_mark(db, queue, c) for c in commands)
    try:
        refused = many(commands)
    except Exception as err:  # the sweeper publishes whatever stays unsent
        logger.warning("publishing %d steps failed: %s", len(commands), err)
        return 0
    sent = [c for c in commands if c not in refused and c.id is not None]
    if sent:
        with db.connection() as conn:
            outbox.mark_all_sent(
                conn, sent[0].organization_id, [(c.id, c.attempts) for c in sent if c.id]
            )
    return len(sent)


def sweep(
    db: Database,
    queue: StepQueue,
    *,
    older_than_seconds: float = SWEEP_AFTER_SECONDS,
    limit: int = 100,
) -> int:
    """Republish rows left unsent (a crash between commit and publish); returns how many."""
    with db.connection() as conn:
        stale = outbox.claim_unsent(conn, older_than_seconds=older_than_seconds, limit=limit)
    return sum(publish_and_mark(db, queue, command) for command in stale)


def prune(db: Database, *, retention_days: float) -> int:
    """Delete outbox rows sent more than `retention_days` ago (the table would only grow)."""
    with db.connection() as conn:
        return outbox.prune_sent(conn, older_than_seconds=retention_days * 86_400)


def defer(db: Database, command: OutboxCommand) -> None:
    """A step whose agent is busy with another run waits in the outbox, not in the queue.

    Holding it in a FIFO group would block the group, and with it the very run that must
    finish first; the run that frees the agent publishes it (`wake`), the sweeper otherwise.
    """
    if command.id is not None:
        with db.connection() as conn:
            outbox.mark_unsent(conn, command.organization_id, command.id)


def wake(db: Database, queue: StepQueue, org_id: str, agent_id: str) -> int:
    """Publish the steps that waited for this agent, oldest first."""
    with db.connection() as conn:
        waiting = outbox.unsent_for_agent(conn, org_id, agent_id)
    return sum(publish_and_mark(db, queue, command) for command in waiting)


def wake_organization(db: Database, queue: StepQueue, org_id: str, cap: int) -> int:
    """Publish the steps that waited for the organization's share, as many as it has free
    (CAIRN_ORG_MAX_RUNS); those it cannot take yet wait again, the sweeper looks too."""
    if cap <= 0:
        return 0
    with db.connection() as conn:
        waiting = outbox.waiting_in_organization(conn, org_id, cap)
    return sum(publish_and_mark(db, queue, command) for command in waiting)


def after_step(
    db: Database,
    queue: StepQueue,
    command: OutboxCommand,
    outcome: StepOutcome,
    *,
    continue_here: bool = False,
    cap: int = 0,
) -> None:
    """What every deliverer of steps does with an outcome: continue, wait, or wake others.
    `continue_here`: the caller runs the next step itself (a sync send), so it is not sent;
    `cap`: CAIRN_ORG_MAX_RUNS, for the steps that wait for their organization's share."""
    if outcome.status == "throttled":
        # Its organization holds its share of agents: the step waits in the outbox until
        # one of those runs ends (below), like a step waiting for its agent. A run that
        # ended between the claim and the deferral is seen by looking again.
        defer(db, command)
        wake_organization(db, queue, command.organization_id, cap)
        return
    if outcome.status == "busy":
        defer(db, command)
        # The holder may have ended between our busy answer and the deferral: look again.
        with db.connection() as conn:
            free = outcome.agent_id is not None and agents.lease_free(
                conn, command.organization_id, outcome.agent_id, settled=True
            )
        if free and outcome.agent_id is not None:
            wake(db, queue, command.organization_id, outcome.agent_id)
        return
    if outcome.next_command is not None and not continue_here:
        publish_and_mark(db, queue, outcome.next_command)
    for other in outcome.commands:
        if other.kind == "embed":  # never on the request's path: after the reply
            later.call(publish_and_mark, db, queue, other)
        else:
            publish_and_mark(db, queue, other)
    if outcome.freed_agent:
        # Read by the checkpoint that freed the agent: the steps waiting for it, and for
        # its organization's share (no round trips of `wake` and `wake_organization`).
        for waiting in outcome.waiting:
            publish_and_mark(db, queue, waiting)
