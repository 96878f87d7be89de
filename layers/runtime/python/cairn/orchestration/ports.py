"""What the engine's callers need from the outside world, as small protocols."""

from __future__ import annotations

from typing import Any, Protocol

from cairn.domain.runs import OutboxCommand


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
