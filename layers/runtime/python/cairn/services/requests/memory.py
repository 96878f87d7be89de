"""Archival memory: passages, archives and their search."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from cairn.domain.configs import EmbeddingConfig
from cairn.domain.constants import (
    MAX_PASSAGE_CHARS,
)
from cairn.domain.ids import AgentId, ArchiveId
from cairn.services.requests.base import RequestBody


class CreatePassage(RequestBody):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    tags: list[str] | None = None
    created_at: datetime | None = None


class ArchiveCreate(RequestBody):
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    embedding: str | None = None
    embedding_config: EmbeddingConfig | None = None


class ArchiveUpdate(RequestBody):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = None


class ArchivePassageCreate(RequestBody):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None


class PassageSearch(RequestBody):
    query: str = Field(min_length=1)
    agent_id: AgentId | None = None
    archive_id: ArchiveId | None = None
    tags: list[str] | None = None
    tag_match_mode: Literal["any", "all"] = "any"
    limit: int = Field(default=50, ge=1, le=1000)
    start_date: datetime | None = None
    end_date: datetime | None = None
