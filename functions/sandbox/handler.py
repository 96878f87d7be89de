"""Runs one custom tool call, or one use of a stdio MCP server. This function has no
database or secret permissions, and its network has no route out but the egress proxy,
which answers only a call that carries a pass for its organization's allowed hosts
(`proxy_url`, signed by the caller).

Lambda cannot make namespaces, so the tool (or the server's program) runs as a plain child
process with an empty environment (not even the function's own AWS credentials) but its
own, limits, and a scratch folder removed after the call; afterwards every process it left
behind is killed, since a warm environment serves the next call, maybe another
organization's.

A stdio server's use (`{"serve": {...}}`, from `LambdaSandbox.confined`) is made whole
here: the program started, initialized, its tools listed or one called, and stopped, by the
same client code the local stack runs against its jail.
"""

from __future__ import annotations

import math
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from cairn.tools.runner import leave_nothing_behind
from cairn.tools.sandbox import SandboxRequest, ServerLaunch
from cairn.tools.subprocess_sandbox import SubprocessSandbox

# A stdio server finds the layers' packages (the `mcp` SDK among them), as the function does.
sandbox = SubprocessSandbox(isolation="process", stdio_environment={"PYTHONPATH": "/opt/python"})
# Kept back from the function's remaining time: the SDK's grace to stop a program that will
# not close (2 s), and the answer's way back.
MARGIN_SECONDS = 5.0


def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        if "serve" in event:
            return serve(event, context)
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


def serve(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """{"tools": [...]}, {"result": {"text", "is_error"}} or {"error": why}."""
    from cairn.mcp_servers.client import McpError, McpTarget, call_tool, list_tools

    asked = event["serve"]
    left = math.floor(context.get_remaining_time_in_millis() / 1000 - MARGIN_SECONDS)
    timeout = max(1.0, min(float(asked.get("timeout_seconds") or 30), left))
    launch = ServerLaunch(
        argv=tuple(str(a) for a in asked["argv"]),
        environment={str(k): str(v) for k, v in (asked.get("environment") or {}).items()},
        network=None,  # the caller's pass, if any, is the network (proxy_url)
        timeout_seconds=timeout,
        proxy_url=event.get("proxy_url"),
    )
    with sandbox.confined(launch) as confined:
        target = McpTarget(str(asked.get("name") or launch.argv[0]), "stdio", process=confined)
        try:
            if asked.get("use") == "list_tools":
                listed = list_tools(target, (), timeout)
                return {"tools": [vars(t) for t in listed]}
            done = call_tool(target, asked["tool"], asked.get("arguments") or {}, (), timeout)
        except McpError as err:
            return {"error": str(err)}
    return {"result": {"text": done.text, "is_error": done.is_error}}
