"""Identities."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from cairn.domain.identities import IdentityProperty, IdentityType
from cairn.domain.ids import AgentId, BlockId
from cairn.services.requests.base import StrictBody

IdentityKey = Annotated[str, Field(min_length=1, max_length=500)]


class IdentityCreate(StrictBody):
    identifier_key: IdentityKey
    name: IdentityKey
    identity_type: IdentityType
    project_id: str | None = Field(default=None, max_length=500)
    agent_ids: list[AgentId] | None = Field(default=None, max_length=1000)
    block_ids: list[BlockId] | None = Field(default=None, max_length=1000)
    properties: list[IdentityProperty] | None = Field(default=None, max_length=1000)


class IdentityUpsert(IdentityCreate):
    pass


class IdentityUpdate(StrictBody):
    identifier_key: IdentityKey | None = None
    name: IdentityKey | None = None
    identity_type: IdentityType | None = None
    agent_ids: list[AgentId] | None = Field(default=None, max_length=1000)
    block_ids: list[BlockId] | None = Field(default=None, max_length=1000)
    properties: list[IdentityProperty] | None = Field(default=None, max_length=1000)
