"""Custom tools on AWS: a Lambda function with no VPC, no database and no secret access."""

from __future__ import annotations

import json
from typing import Any

from cairn.tools.sandbox import SandboxRequest, SandboxResult


class LambdaSandbox:
    def __init__(self, function_name: str, client: Any | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("lambda")
        self.function_name = function_name
        self._client = client

    def run(self, request: SandboxRequest) -> SandboxResult:
        try:
            response = self._client.invoke(
                FunctionName=self.function_name,
                Payload=json.dumps(
                    {**request.payload(), "timeout_seconds": request.timeout_seconds}
                ),
            )
            body = json.loads(response["Payload"].read() or b"{}")
        except Exception as err:  # the sandbox being unreachable is the tool failing, not the step
            return SandboxResult(False, f"the tool sandbox could not be reached: {err}")
        if response.get("FunctionError"):
            return SandboxResult(
                False, f"the tool sandbox failed: {body.get('errorMessage', body)}"
            )
        return SandboxResult.from_runner(body)
