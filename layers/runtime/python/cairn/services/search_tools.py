"""`conversation_search` and `archival_memory_search` outside a step (`POST
/v1/agents/{id}/tools/{name}/run`), as Letta runs them: the same functions a step's calls
run (run/backends/search.py), with the model's arguments parsed by the same tool spec.
Nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

from cairn.domain.agents import Agent
from cairn.memory.edits import MemoryEditError
from cairn.run.backends import search
from cairn.run.driving import sending
from cairn.run.runtime import Runtime
from cairn.store import archives
from cairn.tools.registry import BUILTIN_TOOLS
from cairn.tools.sandbox import SandboxResult
from cairn.tools.schema import ToolArgumentError

SEARCH_TOOLS = frozenset({"conversation_search", "archival_memory_search"})


def run(rt: Runtime, org: str, agent: Agent, name: str, args: dict[str, Any]) -> SandboxResult:
    """Search tool `name`'s answer for the agent, as a step's call of it would return it.
    Arguments the tool refuses (a bad date, a missing query) are an error result."""
    with rt.db.connection() as conn:
        archive = archives.archive_for_agent(conn, org, agent.id)
    embedder = sending.Released(rt.engine.embedder_of(agent), rt.yielding)
    context = search.AgentSearch(rt.db, agent, archive, embedder)
    try:
        output = BUILTIN_TOOLS[name].call(context, args)  # type: ignore[arg-type]
    except (MemoryEditError, ToolArgumentError, ValueError) as err:
        return SandboxResult(success=False, value=str(err))
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return SandboxResult(success=True, value=text)
