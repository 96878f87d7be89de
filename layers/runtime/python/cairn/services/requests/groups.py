"""Multi-agent groups."""

from __future__ import annotations

from pydantic import Field

from cairn.domain.constants import (
    MAX_DESCRIPTION_CHARS,
    MAX_GROUP_MEMBERS,
    MAX_GROUP_TURNS,
)
from cairn.domain.groups import ManagerType
from cairn.domain.ids import AgentId, BlockId
from cairn.services.requests.base import RequestBody


class ManagerConfig(RequestBody):
    """Letta's manager configs (RoundRobinManager, SupervisorManager, ... and their Update
    forms) in one shape: each kind reads the fields it has; services/groups checks that
    the kinds with a manager name one."""

    manager_type: ManagerType = "round_robin"
    manager_agent_id: AgentId | None = None
    max_turns: int | None = Field(default=None, ge=1, le=MAX_GROUP_TURNS)
    termination_token: str | None = None
    sleeptime_agent_frequency: int | None = Field(default=None, ge=1)
    max_message_buffer_length: int | None = Field(default=None, gt=4)
    min_message_buffer_length: int | None = Field(default=None, gt=4)


class GroupCreate(RequestBody):
    agent_ids: list[AgentId] = Field(max_length=MAX_GROUP_MEMBERS)
    description: str = Field(max_length=MAX_DESCRIPTION_CHARS)
    manager_config: ManagerConfig = Field(default_factory=ManagerConfig)
    project_id: str | None = None
    shared_block_ids: list[BlockId] = Field(default_factory=list, max_length=MAX_GROUP_MEMBERS)
    hidden: bool | None = None


class GroupUpdate(RequestBody):
    agent_ids: list[AgentId] | None = Field(default=None, max_length=MAX_GROUP_MEMBERS)
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    manager_config: ManagerConfig | None = None
    project_id: str | None = None
    shared_block_ids: list[BlockId] | None = Field(default=None, max_length=MAX_GROUP_MEMBERS)
