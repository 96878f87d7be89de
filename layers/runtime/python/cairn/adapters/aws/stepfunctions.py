"""The workflows on AWS Step Functions (Standard): started by name, answered by task token."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from cairn.domain.runs import OutboxCommand

logger = logging.getLogger(__name__)
# What a token can no longer be answered with: the wait timed out, ended, or never existed.
GONE = ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist")


def execution_name(dedup_key: str) -> str:
    """The outbox key as an execution name: starting it twice starts it once."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", dedup_key)[-80:]


class StepFunctionsWorkflows:
    def __init__(self, approval_arn: str, sleeptime_arn: str, client: Any | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("stepfunctions")
        self.arns = {"approval_wait": approval_arn, "sleeptime": sleeptime_arn}
        self.client = client

    def start(self, command: OutboxCommand) -> None:
        try:
            self.client.start_execution(
                stateMachineArn=self.arns[command.kind],
                name=execution_name(command.dedup_key),
                input=json.dumps(command.payload),
            )
        except self.client.exceptions.ExecutionAlreadyExists:
            logger.info("workflow %s was started already", command.dedup_key)

    def succeed(self, token: str, output: dict[str, Any]) -> bool:
        return self._answer(
            self.client.send_task_success, taskToken=token, output=json.dumps(output)
        )

    def fail(self, token: str, error: str, cause: str) -> bool:
        return self._answer(
            self.client.send_task_failure, taskToken=token, error=error, cause=cause[:32768]
        )

    def _answer(self, call: Any, **kwargs: Any) -> bool:
        try:
            call(**kwargs)
        except self.client.exceptions.ClientError as err:
            code = err.response.get("Error", {}).get("Code", "")
            if code in GONE:
                logger.info("task token no longer waited on (%s)", code)
                return False
            raise
        return True


def stepfunctions_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    import boto3

    return boto3.client("stepfunctions", endpoint_url=endpoint_url, region_name=region)
