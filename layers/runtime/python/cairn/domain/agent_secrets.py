"""An agent's secret: a name and value its custom tools get in their environment (Letta's
AgentEnvironmentVariable, the `secrets` of an AgentState)."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import new_id

# What an environment variable's name may be (POSIX's portable names).
KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class AgentSecret(DomainModel):
    id: str = Field(default_factory=lambda: new_id("agent-env"))
    organization_id: str
    agent_id: str
    key: str = Field(pattern=KEY_PATTERN, max_length=200)
    value: str = Field(repr=False)  # opened; sealed at rest (store/agent_secrets.py)
    description: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
