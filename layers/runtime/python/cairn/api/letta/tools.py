"""Tools, and a tool's run, as Letta sends them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cairn.api.letta.times import iso
from cairn.domain.ids import new_id
from cairn.domain.tools import Tool
from cairn.tools.sandbox import SandboxResult


def tool_json(tool: Tool) -> dict[str, Any]:
    # Letta's Tool admits no other keys (additionalProperties false): no timestamps.
    data = tool.model_dump(
        mode="json", exclude={"organization_id", "metadata", "created_at", "updated_at"}
    )
    return data | {"metadata_": tool.metadata}


def tool_return_json(name: str, result: SandboxResult) -> dict[str, Any]:
    """Letta's ToolReturnMessage for a tool run from source (`POST /v1/tools/run`). Letta
    answers with the id and call id "null" (no message is stored); Cairn gives the answer a
    message id of its own, still stored nowhere, and keeps Letta's "null" call id."""
    status = "success" if result.success else "error"
    outcome = {
        "tool_return": result.value,
        "status": status,
        "tool_call_id": "null",
        "stdout": result.stdout,
        "stderr": result.stderr,
    }
    return {
        "id": new_id("message"),
        "date": iso(datetime.now(UTC)),
        "name": name,
        "message_type": "tool_return_message",
        "otid": None,
        "sender_id": None,
        "step_id": None,
        "is_err": None,
        "seq_id": None,
        "run_id": None,
        **outcome,
        "tool_returns": [outcome],
    }


def execution_json(result: SandboxResult) -> dict[str, Any]:
    """Letta's ToolExecutionResult."""
    return {
        "status": "success" if result.success else "error",
        "func_return": result.value,
        "agent_state": None,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "sandbox_config_fingerprint": None,
    }
