"""Archival memory through the API: list, insert, search, delete."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.base import utc_now
from cairn.domain.constants import MAX_EMBEDDING_DIM
from cairn.domain.passages import Archive, Passage
from cairn.errors import InvalidArgumentError, UnprocessableError, found
from cairn.run.backends import search
from cairn.run.dates import parse_when
from cairn.run.driving import sending
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services.pages import Page
from cairn.services.requests import CreatePassage
from cairn.store import archives
from cairn.store.db import Connection


@dataclass
class Found:
    passage: Passage
    timezone: str  # the agent's: Letta shows each result's time in it


# Letta's estimate (PassageManager.estimate_embeddings_size_async): each archival passage at
# the largest embedding (4,096 dimensions of 4 bytes), in the unit asked for.
STORAGE_UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def embeddings_size(rt: Runtime, org: str, unit: str) -> float:
    if unit not in STORAGE_UNITS:
        raise InvalidArgumentError(
            f"storage_unit: `{unit[:20]}` is not one of {', '.join(STORAGE_UNITS)}"
        )
    with rt.db.connection() as conn:
        passages = archives.count_all_passages(conn, org)
    return passages * 4 * MAX_EMBEDDING_DIM / STORAGE_UNITS[unit]


def list_passages(
    rt: Runtime,
    org: str,
    agent_id: str,
    *,
    page: Page,
    search_text: str | None,
) -> list[Passage]:
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        archive = archives.archive_for_agent(conn, org, agent.id)
        if archive is None:
            return []
        found = archives.list_passages(
            conn,
            org,
            archive.id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
    if search_text:
        found = [p for p in found if search_text.lower() in p.text.lower()]
    return found


def _archive(conn: Connection, agent: Agent) -> Archive:
    """The agent's archive, made on its first insert."""
    org = agent.organization_id
    archive = archives.archive_for_agent(conn, org, agent.id)
    if archive is None:
        archive = archives.create_archive(
            conn,
            Archive(
                organization_id=org,
                name=f"{agent.name} archive",
                embedding_config=agent.embedding_config,
            ),
        )
        archives.attach_archive(conn, org, archive.id, agent.id)
    return archive


def insert(rt: Runtime, org: str, agent_id: str, req: CreatePassage) -> Passage:
    """Store a passage (an identical text already there is returned instead)."""
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
    # Embedded before the transaction opens: no lock is held during the model call.
    embedder = sending.Released(rt.engine.embedder_of(agent), rt.yielding)
    with rt.db.transaction() as conn:
        passage = search.new_passage(
            agent,
            _archive(conn, agent),
            req.text,
            req.tags,
            embedder,
            created_at=req.created_at or utc_now(),
        )
        stored, _ = archives.insert_passage(conn, passage)
    return stored


def search_passages(
    rt: Runtime,
    org: str,
    agent_id: str,
    query: str,
    *,
    tags: list[str] | None,
    match_all: bool,
    start: str | None,
    end: str | None,
    top_k: int,
) -> list[Found]:
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        archive = archives.archive_for_agent(conn, org, agent.id)
    tz = agent.timezone
    found = search.archival_passages(
        rt.db,
        agent,
        archive,
        query,
        rt.engine.embedder_of(agent),
        tags=tags or None,
        match_all=match_all,
        start=_when("start_datetime", start, tz),
        end=_when("end_datetime", end, tz, end=True),
        limit=top_k,
        yielding=rt.yielding,
    )
    return [Found(p, tz) for p, _ in found]


def _when(name: str, value: str | None, tz: str, *, end: bool = False) -> datetime | None:
    try:
        return parse_when(value, tz, end=end)
    except ValueError as err:
        raise UnprocessableError(f"{name}: {err}") from None


def delete(rt: Runtime, org: str, agent_id: str, passage_id: str) -> None:
    with rt.db.transaction() as conn:
        agent = agent_service.fetch(conn, org, agent_id)
        archive = archives.archive_for_agent(conn, org, agent.id)
        passage = archives.get_passage(conn, org, passage_id)
        theirs = passage is not None and archive is not None and passage.archive_id == archive.id
        found(passage if theirs else None, "Passage", passage_id)
        archives.delete_passage(conn, org, passage_id)
