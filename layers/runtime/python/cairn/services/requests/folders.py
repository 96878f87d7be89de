"""Folders (Letta's sources): what creates and changes one."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from cairn.domain.configs import EmbeddingConfig
from cairn.services.requests.base import RequestBody


class FolderCreate(RequestBody):
    """Letta's SourceCreate (both route families take it)."""

    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    instructions: str | None = None
    metadata: dict[str, Any] | None = None
    embedding: str | None = None  # a handle, `provider/model`
    embedding_chunk_size: int | None = Field(default=None, ge=1, le=100_000)
    embedding_config: EmbeddingConfig | None = None


class FolderUpdate(RequestBody):
    """Letta's SourceUpdate."""

    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = None
    instructions: str | None = None
    metadata: dict[str, Any] | None = None
    embedding_config: EmbeddingConfig | None = None
