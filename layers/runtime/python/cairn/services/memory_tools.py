"""An agent's memory tools run outside a step (`POST /v1/agents/{id}/tools/{name}/run`), as
Letta runs them (its core tool executor on the agent's memory): the edit is made on the
agent's blocks and saved in one transaction, each changed block with its version checked
and a history row written, as a step's checkpoint saves one. The agent's next step renders
the changed memory into its system prompt.

A run of the agent in progress keeps its own view: its checkpoint's version check fails on a
block edited here and the step is done again on the fresh blocks, as after a person's edit.
"""

from __future__ import annotations

import json
from typing import Any

from cairn.domain.agents import Agent
from cairn.errors import found
from cairn.memory.edits import CoreMemory, MemoryEditError
from cairn.run.runtime import Runtime
from cairn.store import agents, blocks, history
from cairn.store.db import Connection
from cairn.tools.builtin import memory as memory_tools
from cairn.tools.registry import BUILTIN_TOOLS, ToolSpec
from cairn.tools.sandbox import SandboxResult
from cairn.tools.schema import ToolArgumentError


def runs_outside_a_step(name: str) -> bool:
    """The built-ins that need nothing of a step but the agent's blocks."""
    spec = BUILTIN_TOOLS.get(name)
    return spec is not None and spec.function.__module__ == memory_tools.__name__


class _MemoryOnly:
    """The one capability a memory tool uses (the ToolContext's `memory`)."""

    def __init__(self, memory: CoreMemory) -> None:
        self.memory = memory


def run(rt: Runtime, org: str, agent: Agent, name: str, args: dict[str, Any]) -> SandboxResult:
    """Run memory tool `name` on the agent's blocks and save what it changed. Arguments the
    tool refuses, or an edit it cannot make, are an error result with nothing saved."""
    spec: ToolSpec = BUILTIN_TOOLS[name]
    with rt.db.transaction() as conn:
        memory = CoreMemory.of(org, blocks.for_agent(conn, org, agent.id))
        try:
            output = spec.call(_MemoryOnly(memory), args)  # type: ignore[arg-type]
        except (MemoryEditError, ToolArgumentError) as err:
            return SandboxResult(success=False, value=str(err))
        _save(conn, org, agent.id, memory)
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return SandboxResult(success=True, value=text)


def _save(conn: Connection, org: str, agent_id: str, memory: CoreMemory) -> None:
    found(agents.get(conn, org, agent_id), f"Agent {agent_id} not found")  # deleted meanwhile
    created, updated, deleted = memory.changes()
    for block in created:
        blocks.create(conn, block, actor_type="agent", actor_id=agent_id)
        blocks.attach(conn, org, agent_id, block.id)
    for block in updated:
        blocks.update(
            conn, block, expected_version=block.version, actor_type="agent", actor_id=agent_id
        )
    for block in deleted:
        blocks.detach(conn, org, agent_id, block.id)
        if not blocks.agent_ids(conn, org, block.id):
            blocks.delete(conn, org, block.id)
    if created or updated or deleted:
        history.bump(conn, org, agent_id, "memory tool run")
