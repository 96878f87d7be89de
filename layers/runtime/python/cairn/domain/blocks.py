"""Core-memory blocks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.constants import (
    BLOCK_LABEL_PATTERN,
    CORE_MEMORY_BLOCK_CHAR_LIMIT,
    MAX_BLOCK_LABEL_LENGTH,
)
from cairn.domain.ids import BlockId, OrgId, new_id

BlockLabel = str


class BlockLimitError(ValueError):
    def __init__(self, length: int, limit: int) -> None:
        super().__init__(
            f"Value length ({length} characters) exceeds block limit ({limit} characters)"
        )
        self.length = length
        self.limit = limit


def check_value_fits(value: str, limit: int) -> None:
    if len(value) > limit:
        raise BlockLimitError(len(value), limit)


class Block(DomainModel):
    id: BlockId = Field(default_factory=lambda: new_id("block"))
    organization_id: OrgId
    label: str = Field(min_length=1, max_length=MAX_BLOCK_LABEL_LENGTH, pattern=BLOCK_LABEL_PATTERN)
    value: str = ""
    limit: int = Field(default=CORE_MEMORY_BLOCK_CHAR_LIMIT, ge=1)
    description: str | None = None
    read_only: bool = False
    hidden: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    project_id: str | None = None
    is_template: bool = False
    template_name: str | None = None
    created_by_id: str | None = None
    last_updated_by_id: str | None = None
    # Optimistic concurrency: every write bumps it; a write that names a stale one loses.
    version: int = 1
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    @model_validator(mode="after")
    def _value_within_limit(self) -> Block:
        check_value_fits(self.value, self.limit)
        return self


class BlockHistoryEntry(DomainModel):
    block_id: BlockId
    organization_id: OrgId
    version: int
    label: str
    value: str
    limit: int
    description: str | None = None
    read_only: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    actor_type: Literal["user", "agent", "system"] = "user"
    actor_id: str | None = None
    created_at: datetime = Field(default_factory=utc_now)


@dataclass(frozen=True)
class BlockSearch:
    """Letta's block list filters beyond the label (GET /v1/blocks/); none by default."""

    label_search: str | None = None  # a part of the label, any case (unless `label` is given)
    value_search: str | None = None
    description_search: str | None = None
    name: str | None = None  # the template name
    agents_gt: int | None = None  # attached to more than this many agents
    agents_lt: int | None = None
    agents_eq: list[int] | None = None
    identity_id: str | None = None  # linked to this identity
    identifier_keys: list[str] | None = None  # linked to an identity with one of these keys
