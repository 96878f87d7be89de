"""Groups of agents: sleeptime groups and Letta's multi-agent groups."""

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
    max_message_buffer_length: int | None = None
    min_message_buffer_length: int | None = None
    hidden: bool | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


def round_robin_turns(group: Group) -> int:
    """How many turns one message to a round-robin group runs (Letta: max_turns, else one
    per member)."""
    return group.max_turns or len(group.agent_ids)
