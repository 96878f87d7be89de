"""Archival and recall memory as the tools and the API both use them (one implementation).

Results keep Letta's shapes: archival `{timestamp, content, tags,
relevance}`, recall `{"message": "Showing N results:", "results": [...]}` with
`search_mode`, `rrf_score`, `vector_rank` and `fts_rank`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from cairn.domain.agents import Agent
from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.embeddings.base import Embedder
from cairn.memory.render import letta_time
from cairn.store import archives
from cairn.store import search as sql_search
from cairn.store.db import Connection

DUPLICATE = "Not stored again: archival memory already holds this exact text ({id})."
STORED = "Stored in archival memory."


def new_passage(
    agent: Agent,
    archive: Archive,
    text: str,
    tags: list[str] | None,
    embedder: Embedder,
    *,
    created_at: datetime,
) -> Passage:
    """A passage with its embedding, computed before it is stored (never stored without)."""
    return Passage(
        organization_id=agent.organization_id,
        archive_id=archive.id,
        text=text,
        tags=sorted(set(tags or ())),
        embedding=embedder.embed([text])[0],
        embedding_config=agent.embedding_config,
        created_at=created_at,
        metadata={"embedding_model": embedder.model},
    )


def existing_copy(conn: Connection, passage: Passage) -> Passage | None:
    return archives.by_content_hash(
        conn, passage.organization_id, passage.archive_id, passage.content_hash
    )


def archival(
    conn: Connection,
    agent: Agent,
    archive: Archive | None,
    query: str,
    embedder: Embedder,
    *,
    tags: list[str] | None,
    match_all: bool,
    start: datetime | None,
    end: datetime | None,
    limit: int,
) -> list[dict[str, Any]]:
    """What archival_memory_search returns to the model (times as the prompt shows them)."""
    found = archival_passages(
        conn,
        agent,
        archive,
        query,
        embedder,
        tags=tags,
        match_all=match_all,
        start=start,
        end=end,
        limit=limit,
    )
    return [
        {
            "timestamp": letta_time(p.created_at, agent.timezone),
            "content": p.text,
            "tags": p.tags,
            "relevance": {"search_mode": "vector", "rank": rank, "score": round(1.0 - distance, 6)},
        }
        for rank, (p, distance) in enumerate(found, 1)
    ]


def archival_passages(
    conn: Connection,
    agent: Agent,
    archive: Archive | None,
    query: str,
    embedder: Embedder,
    *,
    tags: list[str] | None,
    match_all: bool,
    start: datetime | None,
    end: datetime | None,
    limit: int,
) -> list[tuple[Passage, float]]:
    """The nearest passages and their cosine distances, nearest first."""
    if archive is None:
        return []
    return sql_search.search_passages(
        conn,
        agent.organization_id,
        archive.id,
        embedder.embed([query])[0],
        tags=tags,
        match_all=match_all,
        start=start,
        end=end,
        limit=limit,
    )


def recall(
    conn: Connection,
    agent: Agent,
    query: str,
    embedder: Embedder | None,
    *,
    roles: list[str] | None,
    start: datetime | None,
    end: datetime | None,
    limit: int,
    now: datetime,
) -> dict[str, Any]:
    semantic = embedder is not None and agent.message_embeddings
    vector = embedder.embed([query])[0] if semantic and embedder is not None else None
    found = sql_search.hybrid_messages(
        conn,
        agent.organization_id,
        agent.id,
        query,
        vector,
        roles=roles,
        start=start,
        end=end,
        limit=limit,
    )
    results = [_recall_result(m, rrf, vr, fr, agent.timezone, now) for m, rrf, vr, fr in found]
    shown: dict[str, Any] = {"message": f"Showing {len(results)} results:", "results": results}
    if not agent.message_embeddings:  # says which search it was: keywords only
        shown["search_mode"] = "fts"
    return shown


def _recall_result(
    message: Message,
    rrf: float,
    vector_rank: int | None,
    fts_rank: int | None,
    tz: str,
    now: datetime,
) -> dict[str, Any]:
    mode = "hybrid" if vector_rank and fts_rank else "vector" if vector_rank else "fts"
    return {
        "timestamp": letta_time(message.created_at, tz),
        "time_ago": _ago(now - message.created_at),
        "role": message.role,
        "relevance": {
            "search_mode": mode,
            "rrf_score": round(rrf, 6),
            "vector_rank": vector_rank,
            "fts_rank": fts_rank,
        },
        "content": message.search_text(),
    }


def _ago(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"
