"""EventBridge schedule -> republish what a crash left unsent in the outbox, re-drive or end
runs that stalled, backfill embeddings, delete outbox rows sent long ago."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.orchestration.assembly.build import runtime
from cairn.orchestration.sweeper import sweep_once

logger = Logger(service="cairn-sweeper")


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    done = sweep_once(runtime())
    logger.info("sweep done", extra=done)
    return done
