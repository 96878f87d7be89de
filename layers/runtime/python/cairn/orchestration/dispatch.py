"""Publishing the continuation a checkpoint wrote, and republishing what a crash left behind."""

from __future__ import annotations

import logging

from cairn.domain.runs import OutboxCommand
from cairn.orchestration.ports import StepQueue
from cairn.store import outbox
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
            outbox.mark_sent(conn, command.organization_id, command.id)
    return True


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
