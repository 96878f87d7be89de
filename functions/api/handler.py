"""API Gateway HTTP API -> the Letta-compatible REST API."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn import tracing
from cairn.api.app import buffered
from cairn.assembly.app import build_app
from cairn.assembly.build import preload_for_snapshot
from cairn.llm import deadline

logger = Logger(service="cairn-api")
app = build_app()
preload_for_snapshot()  # SnapStart: the providers' SDKs and every route's models go into it
# Kept for answering: the response must leave before the function (and API Gateway) ends.
ANSWER_SECONDS = 2.0


@logger.inject_lambda_context(clear_state=True)
@tracing.flushed
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # A sync send waits within CAIRN_SYNC_BUDGET_SECONDS and within what is left of this
    # invocation, whichever ends first (a cold start has eaten some of it).
    with deadline.within(context.get_remaining_time_in_millis() / 1000 - ANSWER_SECONDS):
        return buffered(app, event, context)
