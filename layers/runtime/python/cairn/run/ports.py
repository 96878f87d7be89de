"""What the run needs from the outside world, as small protocols."""

from __future__ import annotations

from typing import Any, Protocol

from cairn.domain.runs import OutboxCommand
from cairn.domain.schedules import Schedule


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
