"""Folders (Letta's sources, both route families): made, listed, changed, deleted, and
attached to agents. A folder's embedding config is pinned when it is made: its files'
passages must all be comparable."""

from __future__ import annotations

from typing import Any

from cairn.domain.base import utc_now
from cairn.domain.folders import Folder
from cairn.embeddings.providers import default_config
from cairn.errors import ConflictError, found
from cairn.llm import endpoints
from cairn.llm.catalog import resolve_embedding
from cairn.run.backends.file_opening import open_for
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services.agents import AgentView
from cairn.services.pages import Page
from cairn.services.requests import FolderCreate, FolderUpdate
from cairn.store import files, folders, tools
from cairn.store.db import Connection
from cairn.tools.registry import BUILTIN_TOOLS, FILE_TOOLS


def fetch(conn: Connection, org: str, folder_id: str) -> Folder:
    folder = found(folders.get(conn, org, folder_id), f"Source with id={folder_id} not found.")
    return folder


def _taken(name: str) -> ConflictError:
    return ConflictError(f"A folder named '{name}' already exists in this organization.")


def create(rt: Runtime, org: str, req: FolderCreate) -> Folder:
    embedding = req.embedding_config or (
        resolve_embedding(req.embedding, rt.settings)
        if req.embedding
        else default_config(rt.settings)
    )
    if req.embedding_config is not None:
        endpoints.check_embedding(req.embedding_config, rt.settings)
    if req.embedding_chunk_size and req.embedding_config is None:
        embedding = embedding.model_copy(update={"embedding_chunk_size": req.embedding_chunk_size})
    folder = Folder(
        organization_id=org,
        name=req.name,
        description=req.description,
        instructions=req.instructions,
        metadata=req.metadata,
        embedding_config=embedding,
    )
    with rt.db.transaction() as conn:
        made = folders.create(conn, folder)
    if made is None:
        raise _taken(req.name)
    return made


def retrieve(rt: Runtime, org: str, folder_id: str) -> Folder:
    with rt.db.connection() as conn:
        return fetch(conn, org, folder_id)


def id_by_name(rt: Runtime, org: str, name: str) -> str:
    with rt.db.connection() as conn:
        folder = found(folders.by_name(conn, org, name), f"Source with name={name} not found.")
    return folder.id


def list_folders(
    rt: Runtime,
    org: str,
    *,
    name: str | None,
    page: Page,
) -> list[Folder]:
    with rt.db.connection() as conn:
        return folders.list_folders(
            conn,
            org,
            name=name,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def count(rt: Runtime, org: str) -> int:
    with rt.db.connection() as conn:
        return folders.count(conn, org)


def modify(rt: Runtime, org: str, folder_id: str, req: FolderUpdate) -> Folder:
    changes: dict[str, Any] = req.model_dump(exclude_unset=True, exclude_none=True)
    if req.embedding_config is not None:
        endpoints.check_embedding(req.embedding_config, rt.settings)
    with rt.db.transaction() as conn:
        folder = fetch(conn, org, folder_id)
        changed = folder.model_copy(update={**changes, "updated_at": utc_now()})
        stored = folders.update(conn, Folder.model_validate(changed.model_dump()))
    if stored is None:
        raise _taken(changed.name)
    return stored


def delete(rt: Runtime, org: str, folder_id: str) -> None:
    """The folder, its files (their text, passages, agents' views), its attachments; then
    the files' originals."""
    with rt.db.transaction() as conn:
        fetch(conn, org, folder_id)
        keys = files.object_keys(conn, org, folder_id)
        folders.delete(conn, org, folder_id)
    if keys and rt.documents is not None:
        rt.documents.delete(keys)


def metadata(rt: Runtime, org: str, *, detailed: bool) -> dict[str, Any]:
    """Letta's OrganizationSourcesStats: how many folders, files and bytes, per folder."""
    with rt.db.connection() as conn:
        per_folder = files.stats(conn, org)
    sources = [
        {
            **{k: v for k, v in row.items() if k != "files" or detailed},
            "total_size": int(row["total_size"]),
        }
        for row in per_folder
    ]
    return {
        "total_sources": len(per_folder),
        "total_files": sum(row["file_count"] for row in per_folder),
        "total_size": sum(int(row["total_size"]) for row in per_folder),
        "sources": sources,
    }


def agent_ids(
    rt: Runtime,
    org: str,
    folder_id: str,
    *,
    page: Page,
) -> list[str]:
    with rt.db.connection() as conn:
        fetch(conn, org, folder_id)
        return folders.agent_ids(
            conn,
            org,
            folder_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def of_agent(
    rt: Runtime,
    org: str,
    agent_id: str,
    *,
    page: Page,
) -> list[Folder]:
    with rt.db.connection() as conn:
        agent_service.fetch(conn, org, agent_id)
        return folders.of_agent(
            conn,
            org,
            agent_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def attach(rt: Runtime, org: str, agent_id: str, folder_id: str, *, on: bool) -> AgentView:
    """Attach (or detach, `on` False) a folder; the agent as it is then (Letta answers the
    AgentState)."""
    with rt.db.transaction() as conn:
        agent = agent_service.fetch(conn, org, agent_id, for_update=True)
        fetch(conn, org, folder_id)
        if on:  # its files open, as Letta opens them (run/backends/file_opening.py)
            folders.attach(conn, org, folder_id, agent_id)
            attach_file_tools(conn, org, agent_id)
            open_for(conn, agent, files.completed_of_folder(conn, org, folder_id), utc_now())
        else:  # and its files' views go (a later attach opens them afresh)
            folders.detach(conn, org, folder_id, agent_id)
            files.forget_views_of_folder(conn, org, agent_id, folder_id)
            if not folders.of_agent(
                conn, org, agent_id, after=None, before=None, limit=1, order="asc"
            ):
                _file_tools(conn, org, agent_id, attach=False)
        return agent_service.view_of(conn, agent, sealer=rt.engine.sealer)


def attach_file_tools(conn: Connection, org: str, agent_id: str) -> None:
    _file_tools(conn, org, agent_id, attach=True)


def _file_tools(conn: Connection, org: str, agent_id: str, *, attach: bool) -> None:
    """Letta gives an agent the file tools with a folder, and takes them with its last."""
    for name in FILE_TOOLS:
        tool = tools.get_by_name(conn, org, name) or tools.upsert(
            conn, BUILTIN_TOOLS[name].as_tool(org)
        )
        if attach:
            tools.attach(conn, org, agent_id, tool.id)
        else:
            tools.detach(conn, org, agent_id, tool.id)
