"""EventBridge schedule -> republish step commands a crash left unsent in the outbox."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.engine.embedding_jobs import backfill
from cairn.orchestration.dispatch import sweep
from cairn.orchestration.runtime import runtime

logger = Logger(service="cairn-sweeper")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    rt = runtime()
    published = sweep(rt.db, rt.queue)
    # Messages stored while no embedder was reachable (or before an agent had one).
    embedded = backfill(rt.engine)
    logger.info("sweep done", extra={"republished": published, "embedded": embedded})
    return {"republished": published, "embedded": embedded}
