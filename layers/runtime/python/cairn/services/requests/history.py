"""Time travel's requests (Cairn's own: Letta 0.16.1 has none)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from cairn.services.requests.base import StrictBody


class RewindRequest(StrictBody):
    """Back to the agent's state at `version`; archival passages written since are kept
    (`archival: "keep"`) or deleted."""

    version: int = Field(ge=1)
    archival: Literal["keep", "delete"] = "keep"


class ForkRequest(StrictBody):
    """A new agent from this one's state at `version`."""

    version: int = Field(ge=1)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    copy_shared_blocks: bool = False
