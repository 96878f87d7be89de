"""Archives: named collections of passages that agents search as their archival memory.

An agent searches and inserts into one archive: the one it owns (made on its first insert)
or the one attached to it. Attaching a second archive to an agent is a conflict: detach the
first, as the agent's archival tools would not know which to use.
"""

from __future__ import annotations

from dataclasses import dataclass

from cairn.domain.base import utc_now
from cairn.domain.indexing import indexed_text
from cairn.domain.passages import Archive, Passage
from cairn.embeddings.providers import default_config
from cairn.errors import ConflictError, UnprocessableError, found
from cairn.llm import endpoints
from cairn.llm.catalog import resolve_embedding
from cairn.run.backends import search
from cairn.run.driving import sending
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services.agents import AgentView
from cairn.services.pages import Page
from cairn.services.requests import (
    ArchiveCreate,
    ArchivePassageCreate,
    ArchiveUpdate,
    PassageSearch,
)
from cairn.store import archives
from cairn.store import search as sql_search
from cairn.store.db import Connection


def _fetch(conn: Connection, org: str, archive_id: str) -> Archive:
    return found(archives.get_archive(conn, org, archive_id), "Archive", archive_id)


def create(rt: Runtime, org: str, req: ArchiveCreate) -> Archive:
    embedding = req.embedding_config or (
        resolve_embedding(req.embedding, rt.settings)
        if req.embedding
        else default_config(rt.settings)
    )
    if req.embedding_config is not None:
        endpoints.check_embedding(req.embedding_config, rt.settings)
    archive = Archive(
        organization_id=org,
        name=req.name,
        description=req.description,
        embedding_config=embedding,
    )
    with rt.db.transaction() as conn:
        return archives.create_archive(conn, archive)


def list_archives(
    rt: Runtime,
    org: str,
    *,
    name: str | None,
    agent_id: str | None,
    page: Page,
) -> list[Archive]:
    with rt.db.connection() as conn:
        if agent_id is not None:
            agent_service.fetch(conn, org, agent_id)
            own = archives.archive_for_agent(conn, org, agent_id)
            return [own] if own is not None and name in (None, own.name) else []
        return archives.list_archives(
            conn,
            org,
            name=name,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def retrieve(rt: Runtime, org: str, archive_id: str) -> Archive:
    with rt.db.connection() as conn:
        return _fetch(conn, org, archive_id)


def modify(rt: Runtime, org: str, archive_id: str, req: ArchiveUpdate) -> Archive:
    with rt.db.transaction() as conn:
        archive = _fetch(conn, org, archive_id)
        changes = req.model_dump(exclude_unset=True, exclude_none=True)
        return archives.update_archive(conn, archive.model_copy(update=changes))


def delete(rt: Runtime, org: str, archive_id: str) -> Archive:
    with rt.db.transaction() as conn:
        archive = _fetch(conn, org, archive_id)
        archives.delete_archive(conn, org, archive_id)  # its passages and links go with it
        return archive


def agents_of(rt: Runtime, org: str, archive_id: str) -> list[AgentView]:
    with rt.db.connection() as conn:
        _fetch(conn, org, archive_id)
        views = []
        for agent_id in archives.agent_ids(conn, org, archive_id):
            views.append(
                agent_service.view_of(
                    conn, agent_service.fetch(conn, org, agent_id), sealer=rt.engine.sealer
                )
            )
        return views


def attach(rt: Runtime, org: str, agent_id: str, archive_id: str) -> None:
    with rt.db.transaction() as conn:
        agent_service.fetch(conn, org, agent_id, for_update=True)
        _fetch(conn, org, archive_id)
        current = archives.archive_for_agent(conn, org, agent_id)
        if current is not None and current.id != archive_id:
            raise ConflictError(
                f"Agent {agent_id} already has archive {current.id}: detach it first"
            )
        archives.attach_archive(conn, org, archive_id, agent_id)


def detach(rt: Runtime, org: str, agent_id: str, archive_id: str) -> None:
    with rt.db.transaction() as conn:
        agent_service.fetch(conn, org, agent_id)
        _fetch(conn, org, archive_id)
        archives.detach_archive(conn, org, archive_id, agent_id)


def add_passage(rt: Runtime, org: str, archive_id: str, req: ArchivePassageCreate) -> Passage:
    with rt.db.connection() as conn:
        archive = _fetch(conn, org, archive_id)
    embedder = sending.Released(rt.engine.embedder_for(archive.embedding_config, org), rt.yielding)
    created_at = utc_now()
    passage = Passage(
        organization_id=org,
        archive_id=archive.id,
        text=req.text,
        tags=sorted(set(req.tags or ())),
        embedding=embedder.embed([indexed_text(req.text, created_at)])[0],
        embedding_config=archive.embedding_config,
        metadata={**(req.metadata or {}), "embedding_model": embedder.model},
        created_at=created_at,
    )
    with rt.db.transaction() as conn:
        stored, _ = archives.insert_passage(conn, passage)
    return stored


def delete_passage(rt: Runtime, org: str, archive_id: str, passage_id: str) -> None:
    with rt.db.transaction() as conn:
        _fetch(conn, org, archive_id)
        passage = archives.get_passage(conn, org, passage_id)
        theirs = passage is not None and passage.archive_id == archive_id
        found(passage if theirs else None, "Passage", passage_id)
        archives.delete_passage(conn, org, passage_id)


@dataclass
class Scored:
    passage: Passage
    score: float


def search_passages(rt: Runtime, org: str, req: PassageSearch) -> list[Scored]:
    """One archive's passages (the one named, or the agent's), words and meaning fused."""
    with rt.db.connection() as conn:
        if req.archive_id is not None:
            archive: Archive | None = _fetch(conn, org, req.archive_id)
        elif req.agent_id is not None:
            agent_service.fetch(conn, org, req.agent_id)
            archive = archives.archive_for_agent(conn, org, req.agent_id)
        else:
            raise UnprocessableError("agent_id or archive_id: name the archive to search")
    if archive is None:
        return []
    found = search.overlapped(
        rt.db,
        sql_search.passage_search(
            org,
            archive.id,
            tags=req.tags,
            match_all=req.tag_match_mode == "all",
            start=req.start_date,
            end=req.end_date,
        ),
        req.query,
        search.embedding(rt.engine.embedder_for(archive.embedding_config, org), req.query),
        limit=req.limit,
        yielding=rt.yielding,
    )
    return [Scored(p, round(hit.score, 6)) for p, hit in found]
