"""Runs one custom tool call. This function has no database or secret permissions, and its
network has no route out but the egress proxy, which answers only a call that carries a
pass for its organization's allowed hosts (`proxy_url`, signed by the caller).

Lambda cannot make namespaces, so the tool runs as a plain child process with an empty
environment (not even the function's own AWS credentials), limits, and a scratch folder
removed after the call; afterwards every process it left behind is killed, since a warm
environment serves the next call, maybe another organization's.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.tools.runner import leave_nothing_behind
from cairn.tools.sandbox import SandboxRequest
from cairn.tools.subprocess_sandbox import SubprocessSandbox

sandbox = SubprocessSandbox(isolation="process")


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        result = sandbox.run(
            SandboxRequest(
                source=event["source"],
                name=event["name"],
                args=event.get("args") or {},
                tool_call_id=event.get("tool_call_id") or "",
                agent_state=event.get("agent_state"),
                timeout_seconds=float(event.get("timeout_seconds") or 10),
                proxy_url=event.get("proxy_url"),
                environment={str(k): str(v) for k, v in (event.get("environment") or {}).items()},
            )
        )
    finally:
        leave_nothing_behind()
    return {
        "success": result.success,
        "value": result.value,
        "stdout": "".join(result.stdout),
        "stderr": "".join(result.stderr),
    }
