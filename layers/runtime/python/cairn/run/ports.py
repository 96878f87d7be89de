"""The run package's ports, in one module every package can see: what the outside world
does for a run (the queues, the workflows, the documents' store, the scheduler: small
protocols the adapters implement), and what the engine and a step's work are handed at
construction by whoever assembles them (assembly in production, the tests with fakes),
never built inside. The model client and the sandbox are the core's own ports (`llm`,
`tools.sandbox`); `StepParts` bundles them for a step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

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


class StepQueue(Protocol):
    """Delivers step commands, in order per agent, at least once."""

    def publish(self, command: OutboxCommand) -> None: ...


class Workflows(Protocol):
    """The approval and sleeptime workflows: started from the outbox, answered by token."""

    def start(self, command: OutboxCommand) -> None: ...

    def succeed(self, token: str, output: dict[str, Any]) -> bool:
        """Hand a waiting task its result; False if no task waits on the token any more."""
        ...

    def fail(self, token: str, error: str, cause: str) -> bool: ...


class DocumentStore(Protocol):
    """Where the originals of uploaded files live (S3 on AWS), by key."""

    def put(self, key: str, body: bytes, content_type: str) -> None: ...

    def get(self, key: str) -> bytes:
        """The object; KeyError if it is not there."""
        ...

    def delete(self, keys: list[str]) -> None:
        """Remove these objects (those already gone are no error)."""
        ...


class Scheduler(Protocol):
    """What fires scheduled messages on time besides the sweeper (EventBridge Scheduler)."""

    def put(self, schedule: Schedule) -> bool: ...

    def remove(self, schedule_id: str) -> None: ...


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
