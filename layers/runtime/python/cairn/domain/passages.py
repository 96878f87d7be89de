"""Archives and their passages (archival memory)."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.ids import ArchiveId, OrgId, PassageId, new_id


def content_hash(text: str) -> str:
    """The key that makes an identical text in one archive a duplicate."""
    return hashlib.sha256(text.encode()).hexdigest()


def plain_vector(value: Any) -> Any:
    """pgvector hands vectors back as its own Vector (or numpy) type; keep plain floats."""
    for convert in ("to_list", "tolist"):
        if hasattr(value, convert):
            return getattr(value, convert)()
    return value


class Archive(DomainModel):
    id: ArchiveId = Field(default_factory=lambda: new_id("archive"))
    organization_id: OrgId
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    embedding_config: EmbeddingConfig | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


class Passage(DomainModel):
    id: PassageId = Field(default_factory=lambda: new_id("passage"))
    organization_id: OrgId
    archive_id: ArchiveId
    text: str = Field(min_length=1)
    embedding: list[float] | None = None
    embedding_config: EmbeddingConfig | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)

    @field_validator("embedding", mode="before")
    @classmethod
    def _plain_floats(cls, value: Any) -> Any:
        return plain_vector(value)

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)
