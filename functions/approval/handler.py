"""Step Functions Tasks of the approval workflow: wait for the answer, deny on timeout,
queue the answer's first step."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn import tracing
from cairn.assembly.build import runtime
from cairn.run.driving.tasks import approval_task

logger = Logger(service="cairn-approval")


@logger.inject_lambda_context(clear_state=True)
@tracing.flushed
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(action=event.get("action"), run_id=event.get("run_id"))
    return approval_task(runtime(), event)
