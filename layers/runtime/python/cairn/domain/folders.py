"""Folders (Letta's sources): named collections of files that agents read."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, field_validator

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.ids import OrgId, new_id
from cairn.domain.passages import plain_vector


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


FileStatus = Literal["pending", "parsing", "embedding", "completed", "error"]
DuplicateHandling = Literal["skip", "error", "suffix", "replace"]


class FileMetadata(DomainModel):
    """A file of a folder: its original is in the document store under `object_key`."""

    id: str = Field(default_factory=lambda: new_id("file"))
    organization_id: OrgId
    folder_id: str
    file_name: str = Field(min_length=1, max_length=255)
    original_file_name: str
    file_type: str
    file_size: int = Field(ge=0)
    object_key: str
    processing_status: FileStatus = "pending"
    error_message: str | None = None
    total_chunks: int | None = None
    chunks_embedded: int | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


class FilePassage(DomainModel):
    """A chunk of a file's text with its embedding (what semantic_search_files reads)."""

    id: str = Field(default_factory=lambda: new_id("passage"))
    organization_id: OrgId
    folder_id: str
    file_id: str
    chunk_index: int = Field(ge=0)
    text: str = Field(min_length=1)
    embedding: list[float]
    embedding_config: EmbeddingConfig
    created_at: datetime = Field(default_factory=utc_now)

    @field_validator("embedding", mode="before")
    @classmethod
    def _plain_floats(cls, value: Any) -> Any:
        return plain_vector(value)


class FileAgent(DomainModel):
    """One agent's view of one file of a folder attached to it (Letta's FileAgent)."""

    agent_id: str
    file_id: str
    folder_id: str
    organization_id: OrgId
    file_name: str
    is_open: bool = False
    visible_content: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    last_accessed_at: datetime = Field(default_factory=utc_now)
    file_type: str = Field(default="text/plain", exclude=True)  # the file's, read with it


class AgentFolder(DomainModel):
    """A folder attached to an agent, with the agent's view of each of its readable files:
    what `<directories>` shows and the file tools work on."""

    id: str
    name: str
    description: str | None = None
    instructions: str | None = None
    files: list[FileAgent] = Field(default_factory=list)
