"""An operator's command sent to a deployed stack: the migrate function runs it (it is the
one function that reaches the database before any API key exists)."""

from __future__ import annotations

import json
from typing import Any


class CommandFailed(Exception):
    pass


def migrate_function(stack_name: str, client: Any | None = None) -> str:
    """The stack's migrate function, from its `MigrateFunction` output."""
    if client is None:
        import boto3

        client = boto3.client("cloudformation")
    (stack,) = client.describe_stacks(StackName=stack_name)["Stacks"]
    for output in stack.get("Outputs", []):
        if output["OutputKey"] == "MigrateFunction":
            return str(output["OutputValue"])
    raise CommandFailed(f"stack {stack_name} has no MigrateFunction output")


def run_remote(function_name: str, payload: dict[str, Any], client: Any | None = None) -> Any:
    if client is None:
        import boto3

        client = boto3.client("lambda")
    response = client.invoke(FunctionName=function_name, Payload=json.dumps(payload))
    body = json.loads(response["Payload"].read() or b"null")
    if response.get("FunctionError"):
        raise CommandFailed(body.get("errorMessage", body) if isinstance(body, dict) else body)
    return body
