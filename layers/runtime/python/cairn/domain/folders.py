"""Folders (Letta's sources): named collections of files that agents read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.ids import OrgId, new_id


class Folder(DomainModel):
    id: str = Field(default_factory=lambda: new_id("source"))
    organization_id: OrgId
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    instructions: str | None = None
    metadata: dict[str, Any] | None = None
    # Pinned when the folder is made: every passage of its files is embedded with it.
    embedding_config: EmbeddingConfig
    created_by_id: str | None = None
    last_updated_by_id: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
