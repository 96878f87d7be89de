"""Groups of agents; Cairn uses the sleeptime kind (reference §10)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import AgentId, GroupId, OrgId, new_id

ManagerType = Literal[
    "round_robin", "supervisor", "dynamic", "sleeptime", "voice_sleeptime", "swarm"
]


class Group(DomainModel):
    id: GroupId = Field(default_factory=lambda: new_id("group"))
    organization_id: OrgId
    manager_type: ManagerType = "sleeptime"
    manager_agent_id: AgentId | None = None
    agent_ids: list[str] = Field(default_factory=list)
    description: str = ""
    sleeptime_agent_frequency: int | None = Field(default=None, ge=1)
    turns_counter: int = -1
    last_processed_message_id: str | None = None
    max_turns: int | None = None
    termination_token: str | None = None
    shared_block_ids: list[str] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
