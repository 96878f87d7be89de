"""Time travel's requests (Cairn's own: Letta 0.16.1 has none)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from cairn.services.requests.base import StrictBody

# A version is a whole number, as the path's is (`true` was version 1, "5" version 5, and
# 2**70 was taken where the path stops at 2**62).
VersionNumber = Annotated[int, Field(strict=True, ge=1, le=2**62)]


class RewindRequest(StrictBody):
    """Back to the agent's state at `version`; archival passages written since are kept
    (`archival: "keep"`) or deleted."""

    version: VersionNumber
    archival: Literal["keep", "delete"] = "keep"


class ForkRequest(StrictBody):
    """A new agent from this one's state at `version`."""

    version: VersionNumber
    name: str | None = Field(default=None, min_length=1, max_length=200)
    copy_shared_blocks: bool = False
