"""Folders and files in agent files (.af), as Letta 0.16.1 writes and reads them.

Out: the folders attached to the exported agents (`sources`), their files with their text
(`files`; the originals stay behind, as in Letta), each agent's `source_ids` and its views
of the files (`files_agents`). In: the folders made (a name the organization has already
gets Letta's `_<8 hex>` suffix), the files made from their text (it becomes their
original, as plain text), chunked and embedded by the files' jobs after the import commits,
attached to their agents with the file tools and the views the file had.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from cairn.domain.agents import Agent
from cairn.domain.base import utc_now
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.folders import FileAgent, FileMetadata, Folder
from cairn.errors import UnprocessableError
from cairn.jobs import documents, file_jobs
from cairn.run.runtime import Runtime
from cairn.services.folders import attach_file_tools
from cairn.store import files, folders
from cairn.store.db import Connection


@dataclass
class Exported:
    sources: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    by_agent: dict[str, dict[str, Any]] = field(default_factory=dict)  # source_ids, files_agents


def export(conn: Connection, members: list[Agent], ids: Any) -> Exported:
    """What the file says of the members' folders; `ids` renumbers as the rest of the file."""
    out, seen_folders, seen_files = Exported(), set(), set()
    view_number = 0
    for agent in members:
        attached = files.agent_folders(conn, agent.id)
        views = []
        for folder_view in attached:
            if folder_view.id not in seen_folders:
                seen_folders.add(folder_view.id)
                folder = folders.get(conn, agent.organization_id, folder_view.id)
                if folder is not None:
                    out.sources.append(_source(folder, ids))
            for view in folder_view.files:
                if view.file_id not in seen_files:
                    seen_files.add(view.file_id)
                    out.files.append(_file(conn, agent.organization_id, view.file_id, ids))
                views.append(
                    {
                        "id": f"file_agent-{view_number}",
                        "agent_id": ids(agent.id),
                        "file_id": ids(view.file_id),
                        "source_id": ids(view.folder_id),
                        "file_name": view.file_name,
                        "is_open": view.is_open,
                        "visible_content": view.visible_content,
                        "last_accessed_at": view.last_accessed_at.isoformat(),
                    }
                )
                view_number += 1
        out.by_agent[agent.id] = {
            "source_ids": [ids(f.id) for f in attached],
            "files_agents": views,
        }
    return out


def _source(folder: Folder, ids: Any) -> dict[str, Any]:
    return {
        "name": folder.name,
        "description": folder.description,
        "instructions": folder.instructions,
        "metadata": folder.metadata,
        "embedding": None,
        "embedding_chunk_size": None,
        "embedding_config": folder.embedding_config.model_dump(mode="json"),
        "id": ids(folder.id),
    }


def _file(conn: Connection, org: str, file_id: str, ids: Any) -> dict[str, Any]:
    file = files.get(conn, org, file_id)
    assert file is not None
    return {
        "source_id": ids(file.folder_id),
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
        "content": files.content(conn, org, file_id),
        "id": ids(file.id),
    }


@dataclass
class Imported:
    """What the import made, to finish once it committed: the files' jobs to publish."""

    file_ids: list[str] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)  # originals put (removed on failure)


def import_folders(
    rt: Runtime,
    conn: Connection,
    org: str,
    raw: dict[str, Any],
    mapped: dict[str, str],
    embedding: EmbeddingConfig | None,
) -> Imported:
    """Make the file's folders and files in the import's transaction (`mapped`: the file's
    ids to the new ones, agents included); their originals go to the document store now."""
    assert rt.documents is not None
    done = Imported()
    for source in raw.get("sources") or ():
        name = str(source.get("name") or "")
        if folders.by_name(conn, org, name) is not None:
            name = f"{name}_{uuid.uuid4().hex[:8]}"
        config = embedding or EmbeddingConfig.model_validate(source.get("embedding_config"))
        made = folders.create(
            conn,
            Folder(
                organization_id=org,
                name=name,
                description=source.get("description"),
                instructions=source.get("instructions"),
                metadata=source.get("metadata"),
                embedding_config=config,
            ),
        )
        assert made is not None
        mapped[str(source["id"])] = made.id
    for entry in raw.get("files") or ():
        folder_id = mapped.get(str(entry.get("source_id")))
        if folder_id is None:
            raise UnprocessableError(
                f"agent file: files.{entry.get('id')}.source_id: "
                f"no source {entry.get('source_id')} in the file"
            )
        text = entry.get("content") or ""
        file = FileMetadata(
            organization_id=org,
            folder_id=folder_id,
            file_name=str(entry["file_name"]),
            original_file_name=str(entry.get("original_file_name") or entry["file_name"]),
            file_type=str(entry.get("file_type") or "text/plain"),
            file_size=int(entry.get("file_size") or len(text.encode())),
            object_key="",
        )
        file = file.model_copy(update={"object_key": f"{org}/{folder_id}/{file.id}"})
        rt.documents.put(file.object_key, text.encode(), "text/plain")
        done.objects.append(file.object_key)
        stored = files.create(conn, file)
        if stored is None:
            raise UnprocessableError(
                f"agent file: files.{entry.get('id')}: a second file named {file.file_name}"
            )
        mapped[str(entry["id"])] = stored.id
        if text.strip():  # the text is there: the job goes straight to embedding it
            files.put_content(conn, org, stored.id, text)
            chunk = _chunk_tokens(conn, org, folder_id)
            files.set_status(
                conn,
                org,
                stored.id,
                "embedding",
                total=len(documents.chunks(text, chunk)),
                embedded=0,
            )
            done.file_ids.append(stored.id)
        else:
            files.set_status(
                conn, org, stored.id, "error", error="the agent file held no text for it"
            )
    return done


def _chunk_tokens(conn: Connection, org: str, folder_id: str) -> int:
    folder = folders.get(conn, org, folder_id)
    size = folder.embedding_config.embedding_chunk_size if folder else None
    return size or file_jobs.DEFAULT_CHUNK_TOKENS


def attach_to_agent(
    conn: Connection, org: str, agent_id: str, entry: dict[str, Any], mapped: dict[str, str]
) -> None:
    """The agent's folders (with the file tools) and its views of their files."""
    attached = [mapped[s] for s in entry.get("source_ids") or () if s in mapped]
    for folder in attached:
        folders.attach(conn, org, folder, agent_id)
    if attached:
        attach_file_tools(conn, org, agent_id)
    views = []
    for view in entry.get("files_agents") or ():
        file_id = mapped.get(str(view.get("file_id")))
        folder_id = mapped.get(str(view.get("source_id")))
        if file_id is None or folder_id is None:
            continue
        views.append(
            FileAgent(
                agent_id=agent_id,
                file_id=file_id,
                folder_id=folder_id,
                organization_id=org,
                file_name=str(view.get("file_name") or ""),
                is_open=bool(view.get("is_open")),
                visible_content=view.get("visible_content"),
                last_accessed_at=view.get("last_accessed_at") or utc_now(),
            )
        )
    files.put_views(conn, views)
