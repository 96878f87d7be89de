"""Blocks, passages, archives and archival search results as Letta sends them."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from cairn.api.letta.times import iso
from cairn.domain.blocks import Block
from cairn.domain.folders import FileAgent, FileMetadata, FilePassage, Folder
from cairn.domain.passages import Archive, Passage


def block_json(block: Block) -> dict[str, Any]:
    data = block.model_dump(mode="json", exclude={"organization_id", "version"})
    return data | {"created_at": iso(block.created_at), "updated_at": iso(block.updated_at)}


def passage_json(passage: Passage) -> dict[str, Any]:
    data = passage.model_dump(mode="json", exclude={"organization_id"})
    return data | {
        "is_deleted": False,
        "file_id": None,
        "file_name": None,
        "source_id": None,
        "created_at": iso(passage.created_at),
    }


def search_result_json(passage: Passage, timezone: str) -> dict[str, Any]:
    """Letta's ArchivalMemorySearchResult: ISO-8601 in the agent's timezone, no relevance."""
    when = passage.created_at.astimezone(ZoneInfo(timezone)).isoformat()
    return {"timestamp": when, "content": passage.text, "tags": passage.tags}


def archive_json(archive: Archive) -> dict[str, Any]:
    data = archive.model_dump(mode="json")
    return data | {
        "vector_db_provider": "native",
        "created_by_id": None,
        "last_updated_by_id": None,
        "created_at": iso(archive.created_at),
        "updated_at": iso(archive.updated_at),
    }


def folder_json(folder: Folder, *, source: bool = False) -> dict[str, Any]:
    """A Folder, or (`source`) a Source: the same fields plus `vector_db_provider`."""
    data = folder.model_dump(mode="json")
    times = {"created_at": iso(folder.created_at), "updated_at": iso(folder.updated_at)}
    return data | times | ({"vector_db_provider": "native"} if source else {})


def file_json(file: FileMetadata, content: str | None = None) -> dict[str, Any]:
    """Letta's FileMetadata (its folder still called `source_id`); `content` on request."""
    return {
        "source_id": file.folder_id,
        "file_name": file.file_name,
        "original_file_name": file.original_file_name,
        "file_path": None,
        "file_type": file.file_type,
        "file_size": file.file_size,
        "file_creation_date": None,
        "file_last_modified_date": None,
        "processing_status": file.processing_status,
        "error_message": file.error_message,
        "total_chunks": file.total_chunks,
        "chunks_embedded": file.chunks_embedded,
        "content": content,
        "id": file.id,
        "organization_id": file.organization_id,
        "created_at": iso(file.created_at),
        "updated_at": iso(file.updated_at),
    }


def file_passage_json(passage: FilePassage, file_name: str | None = None) -> dict[str, Any]:
    """A chunk of a file, as Letta's Passage (no archive; its file and folder named)."""
    return {
        "id": passage.id,
        "organization_id": passage.organization_id,
        "archive_id": None,
        "source_id": passage.folder_id,
        "file_id": passage.file_id,
        "file_name": file_name,
        "text": passage.text,
        "embedding": passage.embedding,
        "embedding_config": passage.embedding_config.model_dump(mode="json"),
        "metadata": {},
        "tags": None,
        "is_deleted": False,
        "created_at": iso(passage.created_at),
    }


def agent_file_json(attachment_id: str, view: FileAgent, folder_name: str) -> dict[str, Any]:
    """Letta's AgentFileAttachment: one file as an agent sees it."""
    return {
        "id": attachment_id,
        "file_id": view.file_id,
        "file_name": view.file_name,
        "folder_id": view.folder_id,
        "folder_name": folder_name,
        "is_open": view.is_open,
        "last_accessed_at": iso(view.last_accessed_at),
        "visible_content": view.visible_content,
        "start_line": view.start_line,
        "end_line": view.end_line,
    }
