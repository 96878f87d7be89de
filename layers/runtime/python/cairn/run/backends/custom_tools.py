"""A custom tool's call: in the sandbox, with what the agent lets it see (its state, when
the tool asks for it) and its secrets, inside a step or outside one (the tool-run API)."""

from __future__ import annotations

from typing import Any

from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.tools import Tool
from cairn.sealing import Sealer
from cairn.store import agent_secrets, sandbox_configs
from cairn.store.db import Connection
from cairn.tools.sandbox import Network, Sandbox, SandboxRequest, SandboxResult
from cairn.tools.source import takes_agent_state

# What of a block a tool that takes the agent's state sees (Letta's fields).
BLOCK_FIELDS_FOR_TOOLS = {"id", "label", "value", "limit", "description", "read_only"}


def run_in_sandbox(
    sandbox: Sandbox,
    tool: Tool,
    args: dict[str, Any],
    tool_call_id: str,
    *,
    agent: Agent,
    blocks: list[Block],
    default_timeout: float,
    hosts: tuple[str, ...] = (),
    environment: dict[str, str] | None = None,
) -> SandboxResult:
    """One custom tool call in the sandbox, inside a step or outside one (the tool-run API),
    with the agent's secrets in its environment."""
    source = tool.source_code or ""
    agent_state = None
    if takes_agent_state(source, tool.name):
        # What Letta hands such a tool, as data; the sandbox gives it attribute access.
        agent_state = {
            **agent.model_dump(
                mode="json", include={"id", "name", "agent_type", "tags", "metadata", "description"}
            ),
            "blocks": [b.model_dump(mode="json", include=BLOCK_FIELDS_FOR_TOOLS) for b in blocks],
        }
    timeout = float(tool.metadata.get("timeout_seconds") or default_timeout)
    return sandbox.run(
        SandboxRequest(
            source=source,
            name=tool.name,
            args=args,
            tool_call_id=tool_call_id,
            agent_state=agent_state,
            timeout_seconds=timeout,
            network=Network(agent.organization_id, hosts),
            environment=environment or {},
        )
    )


def secrets_environment(conn: Connection, sealer: Sealer, agent: Agent) -> dict[str, str]:
    """A tool call's environment, opened for that call: the organization's `local` sandbox
    config's variables, then the agent's secrets over them (as Letta layers them)."""
    org = agent.organization_id
    found = agent_secrets.opened(conn, sealer, org, [agent.id])
    return {
        **sandbox_configs.local_environment(conn, sealer, org),
        **{secret.key: secret.value for secret in found[agent.id]},
    }
