"""Step Functions Tasks of the sleeptime workflow: plan the fan-out, start one sleeptime
agent's background run (its last step sends the task token back), record progress."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn import tracing
from cairn.assembly.build import runtime
from cairn.run.driving.tasks import sleeptime_task

logger = Logger(service="cairn-sleeptime")


@logger.inject_lambda_context(clear_state=True)
@tracing.flushed
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(action=event.get("action"), group_id=event.get("group_id"))
    return sleeptime_task(runtime(), event)
