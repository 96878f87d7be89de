"""The run package's ports: what the engine and a step's work are handed at construction
by whoever assembles them (assembly in production, the tests with fakes), never built
inside. The platform ports themselves (the LLM client, the sandbox, the queues, the
workflow) are the core's own (`llm`, `tools.sandbox`, `run.runtime`); these bundle and name
what the run package takes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cairn.config import Settings
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.runs import OutboxCommand, Run
from cairn.domain.schedules import Schedule
from cairn.domain.tools import Tool
from cairn.embeddings.base import Embedder
from cairn.run.backends.agent_messages import Messenger
from cairn.run.steps.step_model import StepModel
from cairn.sealing import Sealer
from cairn.store.db import Database
from cairn.tools.sandbox import Sandbox

# A call of a tool served outside Cairn (an MCP server's): {"success", "result"}; the MCP
# integration's, handed to the engine at assembly.
ExternalTools = Callable[
    [Database, Sealer, Settings, Sandbox, Tool, dict[str, Any]], dict[str, Any]
]

# What an edge starts when a run ends (a channel's reply): a command for the outbox, or None.
RunEnd = Callable[[Run], OutboxCommand | None]


@dataclass(frozen=True)
class StepParts:
    """What a turn works with, handed over by the engine that runs it: the model, the
    database its tools read, the sandbox of custom tools, the settings, the clock."""

    model: StepModel
    db: Database
    settings: Settings
    sandbox: Sandbox
    embedder_for: Callable[[EmbeddingConfig | None, str | None], Embedder]  # config, who pays
    clock: Callable[[], datetime]
    sealer: Sealer  # opens the agent's secrets for its custom tools
    messenger: Messenger | None = None  # runs the turns of agents a tool messages
    scheduler: Callable[[Schedule], object] | None = None  # fires schedules on time
    external_tools: ExternalTools | None = None  # calls MCP servers' tools (assembly's)
