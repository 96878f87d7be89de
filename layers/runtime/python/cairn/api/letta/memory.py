"""Blocks, passages, archives and archival search results as Letta sends them."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from cairn.api.letta.times import iso
from cairn.domain.blocks import Block
from cairn.domain.folders import Folder
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
