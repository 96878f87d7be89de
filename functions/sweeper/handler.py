"""EventBridge schedule -> republish what a crash left unsent in the outbox, backfill
embeddings, delete outbox rows sent long ago."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.engine.embedding_jobs import backfill
from cairn.orchestration.dispatch import prune, sweep
from cairn.orchestration.runtime import runtime

logger = Logger(service="cairn-sweeper")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    rt = runtime()
    published = sweep(rt.db, rt.queue)
    # Messages whose embedding job was lost or failed (jobs have no outbox row), or that
    # were stored while no embedder was reachable.
    embedded = backfill(rt.engine)
    pruned = prune(rt.db, retention_days=rt.settings.outbox_retention_days)
    done = {"republished": published, "embedded": embedded, "pruned": pruned}
    logger.info("sweep done", extra=done)
    return done
