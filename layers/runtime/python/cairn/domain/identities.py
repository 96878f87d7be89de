"""Identities (Letta's): who an application's agents and blocks belong to, by its own key."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from cairn.domain.base import DomainModel, Value, utc_now
from cairn.domain.ids import OrgId, new_id

IdentityType = Literal["org", "user", "other"]


class IdentityProperty(Value):
    key: str = Field(min_length=1, max_length=200)
    value: str | int | float | bool | dict[str, Any]
    type: Literal["string", "number", "boolean", "json"]


class Identity(DomainModel):
    id: str = Field(default_factory=lambda: new_id("identity"))
    organization_id: OrgId
    identifier_key: str = Field(min_length=1, max_length=500)
    name: str = Field(min_length=1, max_length=500)
    identity_type: IdentityType
    project_id: str | None = None
    properties: list[IdentityProperty] = Field(default_factory=list)
    # What it is linked to, as read (the links are rows of their own, written apart).
    agent_ids: list[str] = Field(default_factory=list)
    block_ids: list[str] = Field(default_factory=list)
    created_by_id: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
