"""Runs one custom tool call. This function has no VPC, database or secret permissions.

The tool still runs in a fresh subprocess with an empty environment, so it cannot read the
function's own AWS credentials from its environment either.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.tools.sandbox import SandboxRequest, SubprocessSandbox

sandbox = SubprocessSandbox()


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    result = sandbox.run(
        SandboxRequest(
            source=event["source"],
            name=event["name"],
            args=event.get("args") or {},
            tool_call_id=event.get("tool_call_id") or "",
            agent_state=event.get("agent_state"),
            timeout_seconds=float(event.get("timeout_seconds") or 10),
        )
    )
    return {
        "success": result.success,
        "value": result.value,
        "stdout": "".join(result.stdout),
        "stderr": "".join(result.stderr),
    }
