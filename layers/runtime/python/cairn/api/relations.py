"""Which relationships an AgentState carries."""

from __future__ import annotations

from cairn.api import http


def relations_wanted(include: list[str] | None) -> bool:
    """The 1.x SDKs get blocks and tools only when they ask (`include`), as from Letta."""
    return bool(include) or not http.sdk_1x()
