"""API Gateway HTTP API -> the Letta-compatible REST API."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.api.app import build_app
from cairn.orchestration.runtime import preload_for_snapshot

logger = Logger(service="cairn-api")
preload_for_snapshot()  # SnapStart: the providers' SDKs go into the snapshot
app = build_app()


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
