"""Archival and recall memory as the tools and the API both use them (one implementation).

Results keep Letta's shapes: archival `{timestamp, content, tags,
relevance}`, recall `{"message": "Showing N results:", "results": [...]}` with
`search_mode`, `rrf_score`, `vector_rank` and `fts_rank`.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from cairn.domain.agents import Agent
from cairn.domain.indexing import indexed_text
from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.embeddings.base import Embedder
from cairn.memory.render import letta_time
from cairn.run.dates import parse_when
from cairn.store import archives
from cairn.store import search as sql_search
from cairn.store.db import Connection, Database

DEFAULT_SEARCH_LIMIT = 5
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
        embedding=embedder.embed([indexed_text(text, created_at)])[0],
        embedding_config=agent.embedding_config,
        created_at=created_at,
        metadata={"embedding_model": embedder.model},
    )


def existing_copy(conn: Connection, passage: Passage) -> Passage | None:
    return archives.by_content_hash(
        conn, passage.organization_id, passage.archive_id, passage.content_hash
    )


def archival(
    db: Database,
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
        db,
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
            "relevance": {
                "search_mode": _mode(hit),
                "rank": rank,
                "score": round(hit.score, 6),
                "vector_rank": hit.vector_rank,
                "fts_rank": hit.fts_rank,
            },
        }
        for rank, (p, hit) in enumerate(found, 1)
    ]


# A query's words' statement runs on these threads while the query is embedded on the
# caller's: on two cores the model and the statement overlap (docs/memory.md, "What it
# costs"), and the embedding, the longer half, starts at once instead of after a thread's
# wake-up (1-3 ms on a busy machine).
_WORDS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="search-words")


def overlapped(
    db: Database,
    found: sql_search.Search,
    text: str,
    embed: Callable[[], list[float]] | None,
    *,
    limit: int,
    ranking: sql_search.Ranking = sql_search.DEFAULT,
    yielding: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> list[tuple[Any, sql_search.Hit]]:
    """A search whose words' half runs while its query is embedded, each statement on a
    connection held only for it (never across the embedding, which may load a model)."""
    vector = None
    if embed is not None and ranking.semantic:
        pending = _WORDS.submit(_words, db, found, text, ranking)
        with yielding():  # gives the function back to other callers meanwhile
            vector = embed()
        by_words = pending.result()
    else:
        by_words = _words(db, found, text, ranking)
    with db.connection() as conn:
        return sql_search.best(conn, found, by_words, vector, ranking, limit)


def _words(
    db: Database, found: sql_search.Search, text: str, ranking: sql_search.Ranking
) -> sql_search.Words:
    with db.connection() as conn:
        return sql_search.words(conn, found, text, ranking)


def embedding(embedder: Embedder, text: str) -> Callable[[], list[float]]:
    return lambda: embedder.embed([text])[0]


def archival_passages(
    db: Database,
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
    yielding: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> list[tuple[Passage, sql_search.Hit]]:
    """The archive's passages best first: words and meaning fused (store/search.py)."""
    if archive is None:
        return []
    found = sql_search.passage_search(
        agent.organization_id, archive.id, tags=tags, match_all=match_all, start=start, end=end
    )
    return overlapped(db, found, query, embedding(embedder, query), limit=limit, yielding=yielding)


def recall(
    db: Database,
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
    """What conversation_search returns to the model: the agent's messages found by words,
    and by meaning when they are embedded."""
    found = sql_search.message_search(
        agent.organization_id, agent.id, roles=roles, start=start, end=end
    )
    semantic = embedder is not None and agent.message_embeddings
    embed = embedding(embedder, query) if semantic and embedder is not None else None
    hits = overlapped(db, found, query, embed, limit=limit)
    results = [_recall_result(m, hit, agent.timezone, now) for m, hit in hits]
    shown: dict[str, Any] = {"message": f"Showing {len(results)} results:", "results": results}
    if not agent.message_embeddings:  # says which search it was: keywords only
        shown["search_mode"] = "fts"
    return shown


def _mode(hit: sql_search.Hit) -> str:
    """Which halves found it among their candidates."""
    return "hybrid" if hit.vector_rank and hit.fts_rank else "vector" if hit.vector_rank else "fts"


def _recall_result(message: Message, hit: sql_search.Hit, tz: str, now: datetime) -> dict[str, Any]:
    return {
        "timestamp": letta_time(message.created_at, tz),
        "time_ago": _ago(now - message.created_at),
        "role": message.role,
        "relevance": {
            "search_mode": _mode(hit),
            # Letta's field name; the fused score (store/search.py), no longer a rank fusion
            "rrf_score": round(hit.score, 6),
            "vector_rank": hit.vector_rank,
            "fts_rank": hit.fts_rank,
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


# -- the two tools, as a step runs them and as POST /v1/agents/{id}/tools/run does ---------


class SearchScope(NamedTuple):
    """Where the search tools of one agent look, and when they are called."""

    db: Database
    agent: Agent
    archive: Archive | None
    embedder: Embedder | None
    now: datetime


# A model's `limit` or `top_k` is taken within these (a negative or huge one was an error or
# a walk of the whole index); the REST routes bound theirs in their request models.
MAX_SEARCH_LIMIT = 100


def _bounded(limit: int | None) -> int:
    return max(1, min(limit or DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT))


class SearchTools:
    """`conversation_search` and `archival_memory_search` as a ToolContext offers them, with
    their arguments as the model gives them: a step's context (run/backends/context.py) and
    the calls outside a step (AgentSearch) each say where they look."""

    def search_scope(self) -> SearchScope:
        raise NotImplementedError

    def conversation_search(
        self,
        query: str,
        *,
        roles: list[str] | None,
        limit: int | None,
        start_date: str | None,
        end_date: str | None,
    ) -> dict[str, Any]:
        db, agent, _, embedder, now = self.search_scope()
        tz = agent.timezone
        start, end = parse_when(start_date, tz), parse_when(end_date, tz, end=True)
        return recall(
            db,
            agent,
            query,
            embedder,
            roles=[r for r in roles or () if r != "tool"] or None,
            start=start,
            end=end,
            limit=_bounded(limit),
            now=now,
        )

    def archival_memory_search(
        self,
        query: str,
        *,
        tags: list[str] | None,
        tag_match_mode: str,
        top_k: int | None,
        start_datetime: str | None,
        end_datetime: str | None,
    ) -> list[dict[str, Any]]:
        db, agent, archive, embedder, _ = self.search_scope()
        if embedder is None or archive is None:
            return []
        tz = agent.timezone
        start, end = parse_when(start_datetime, tz), parse_when(end_datetime, tz, end=True)
        return archival(
            db,
            agent,
            archive,
            query,
            embedder,
            tags=tags,
            match_all=tag_match_mode == "all",
            start=start,
            end=end,
            limit=_bounded(top_k),
        )


class AgentSearch(SearchTools):
    """One agent's search tools outside a step (POST /v1/agents/{id}/tools/{name}/run)."""

    def __init__(
        self, db: Database, agent: Agent, archive: Archive | None, embedder: Embedder | None
    ) -> None:
        self.db, self.agent, self.archive, self.embedder = db, agent, archive, embedder

    def search_scope(self) -> SearchScope:
        return SearchScope(self.db, self.agent, self.archive, self.embedder, datetime.now(UTC))
