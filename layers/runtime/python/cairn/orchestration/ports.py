"""What the engine's callers need from the outside world, as small protocols."""

from __future__ import annotations

from typing import Protocol

from cairn.domain.runs import OutboxCommand


class StepQueue(Protocol):
    """Delivers step commands, in order per agent, at least once."""

    def publish(self, command: OutboxCommand) -> None: ...
