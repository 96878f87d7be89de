"""Archival and recall search in Postgres: HNSW vector search, full text, and their fusion.

Both run in one pipelined exchange: `hnsw.iterative_scan` is set for the transaction only
(a session setting would pin RDS Proxy connections), so a selective filter still returns
`limit` rows instead of whatever survived the first `ef_search` candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import sql

from cairn.domain.messages import Message
from cairn.domain.passages import Passage
from cairn.store.db import Connection, pipeline
from cairn.store.messages import MESSAGE_COLUMNS

# Reciprocal rank fusion constant (Cormack et al.): damps the weight of the very top ranks.
RRF_K = 60
# Candidates each half of a hybrid search contributes before fusion.
CANDIDATES_PER_RESULT = 4
# bench/search.py, 100k rows of 384 dimensions: ef_search 64 gives recall@10 0.970 at
# 3.6 ms p50; 100 gives 0.988 at 5.7 ms. Iterative scans extend it when filters need more.
EF_SEARCH = 64
# vector indexes only go to 2,000 dimensions; larger embeddings are indexed as halfvec.
_HALFVEC_ABOVE = 2000


def vector_type(dim: int) -> sql.Composable:
    kind = "halfvec" if dim > _HALFVEC_ABOVE else "vector"
    return sql.SQL(f"{kind}({int(dim)})")


def vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(f"{v:.7g}" for v in vector) + "]"


def in_transaction(conn: Connection, query: sql.Composed, params: dict[str, Any]) -> list[Any]:
    """BEGIN, the index settings, the query, COMMIT: one round trip in pipeline mode."""
    with pipeline(conn) as pipelined:
        conn.execute("BEGIN")
        conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
            " set_config('hnsw.ef_search', %s, true)",
            (str(EF_SEARCH),),
        )
        cursor = conn.execute(query, params)
        conn.execute("COMMIT")
        pipelined.sync()
        return cursor.fetchall()


# Everything but the embedding itself: results never need it (and 384+ floats a row to
# parse is most of a search's client time).
PASSAGES = """
SELECT p.id, p.organization_id, p.archive_id, p.text, p.embedding_config, p.tags, p.metadata,
       p.created_at, (p.embedding::{vt} <=> %(q)s::{vt}) AS distance
FROM passages p
WHERE p.organization_id = %(org)s AND p.archive_id = %(archive_id)s
  AND vector_dims(p.embedding) = %(dim)s
  AND (%(tags)s::text[] IS NULL
       OR (CASE WHEN %(match_all)s THEN p.tags @> %(tags)s ELSE p.tags && %(tags)s END))
  AND (%(start)s::timestamptz IS NULL OR p.created_at >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR p.created_at <= %(end)s)
ORDER BY p.embedding::{vt} <=> %(q)s::{vt}
LIMIT %(limit)s
"""


def search_passages(
    conn: Connection,
    org_id: str,
    archive_id: str,
    query: Sequence[float],
    *,
    tags: list[str] | None = None,
    match_all: bool = False,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = 5,
) -> list[tuple[Passage, float]]:
    """Nearest passages by cosine distance, best first, within the filters."""
    dim = len(query)
    statement = sql.SQL(PASSAGES).format(vt=vector_type(dim))
    params = {
        "org": org_id,
        "archive_id": archive_id,
        "q": vector_literal(query),
        "dim": dim,
        "tags": tags or None,
        "match_all": match_all,
        "start": start,
        "end": end,
        "limit": limit,
    }
    return [
        (Passage.model_validate(r), float(r["distance"]))
        for r in in_transaction(conn, statement, params)
    ]


# A rewound message (store/history.py) is out of the agent's recall: kept, never found here.
HYBRID = """
WITH q AS (SELECT websearch_to_tsquery('english', %(text)s) AS t),
fts AS (
    SELECT m.id, row_number() OVER (ORDER BY ts_rank(m.fts, q.t) DESC, m.id) AS rank
    FROM messages m, q
    WHERE m.organization_id = %(org)s AND m.agent_id = %(agent)s AND m.search_text <> ''
      AND m.fts @@ q.t AND m.rewound_at IS NULL
      AND (%(roles)s::text[] IS NULL OR m.role = ANY(%(roles)s))
      AND (%(start)s::timestamptz IS NULL OR m.created_at >= %(start)s)
      AND (%(end)s::timestamptz IS NULL OR m.created_at <= %(end)s)
    ORDER BY ts_rank(m.fts, q.t) DESC, m.id LIMIT %(candidates)s
),
vec AS ({vector_part}),
fused AS (
    SELECT coalesce(vec.id, fts.id) AS id, vec.rank AS vector_rank, fts.rank AS fts_rank,
           coalesce(1.0 / (%(k)s + vec.rank), 0) + coalesce(1.0 / (%(k)s + fts.rank), 0) AS rrf
    FROM vec FULL JOIN fts ON fts.id = vec.id
)
SELECT {columns}, fused.rrf, fused.vector_rank, fused.fts_rank
FROM fused JOIN messages m ON m.id = fused.id
ORDER BY fused.rrf DESC, m.sequence_id DESC
LIMIT %(limit)s
"""
VECTOR_PART = """
    SELECT m.id, row_number() OVER (ORDER BY m.embedding::{vt} <=> %(q)s::{vt}) AS rank
    FROM messages m
    WHERE m.organization_id = %(org)s AND m.agent_id = %(agent)s AND m.search_text <> ''
      AND vector_dims(m.embedding) = %(dim)s AND m.rewound_at IS NULL
      AND (%(roles)s::text[] IS NULL OR m.role = ANY(%(roles)s))
      AND (%(start)s::timestamptz IS NULL OR m.created_at >= %(start)s)
      AND (%(end)s::timestamptz IS NULL OR m.created_at <= %(end)s)
    ORDER BY m.embedding::{vt} <=> %(q)s::{vt} LIMIT %(candidates)s
"""
NO_VECTOR_PART = "SELECT NULL::text AS id, NULL::bigint AS rank WHERE false"


def hybrid_messages(
    conn: Connection,
    org_id: str,
    agent_id: str,
    text: str,
    query: Sequence[float] | None,
    *,
    roles: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = 5,
) -> list[tuple[Message, float, int | None, int | None]]:
    """(message, rrf score, vector rank, full-text rank), best first.

    Full text and vector similarity each rank their best candidates; reciprocal rank fusion
    merges them. Without a query vector (no embeddings yet) it is full text alone.
    """
    columns = sql.SQL(", ".join(f"m.{c.strip()}" for c in MESSAGE_COLUMNS.split(",")))
    vector_part: sql.Composable = (
        sql.SQL(VECTOR_PART).format(vt=vector_type(len(query)))
        if query is not None
        else sql.SQL(NO_VECTOR_PART)
    )
    statement = sql.SQL(HYBRID).format(vector_part=vector_part, columns=columns)
    params = {
        "org": org_id,
        "agent": agent_id,
        "text": text,
        "roles": roles,
        "start": start,
        "end": end,
        "limit": limit,
        "candidates": limit * CANDIDATES_PER_RESULT,
        "k": RRF_K,
        "q": vector_literal(query) if query is not None else None,
        "dim": len(query) if query is not None else None,
    }
    rows = in_transaction(conn, statement, params)
    return [
        (Message.model_validate(r), float(r["rrf"]), r["vector_rank"], r["fts_rank"]) for r in rows
    ]


# Across every agent of the organisation: full text only, since agents' embeddings may be
# of different models and sizes (a query vector fits one of them at most).
ORG_FTS = """
WITH q AS (SELECT websearch_to_tsquery('english', %(text)s) AS t)
SELECT {columns}, row_number() OVER (ORDER BY ts_rank(m.fts, q.t) DESC, m.id) AS fts_rank
FROM messages m, q
WHERE m.organization_id = %(org)s AND m.search_text <> '' AND m.fts @@ q.t
  AND (%(roles)s::text[] IS NULL OR m.role = ANY(%(roles)s))
  AND (%(start)s::timestamptz IS NULL OR m.created_at >= %(start)s)
  AND (%(end)s::timestamptz IS NULL OR m.created_at <= %(end)s)
ORDER BY ts_rank(m.fts, q.t) DESC, m.id LIMIT %(limit)s
"""


def organization_messages(
    conn: Connection,
    org_id: str,
    text: str,
    *,
    roles: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = 50,
) -> list[tuple[Message, int]]:
    """(message, full-text rank) over all the organisation's agents, best first."""
    columns = sql.SQL(", ".join(f"m.{c.strip()}" for c in MESSAGE_COLUMNS.split(",")))
    params = {
        "org": org_id,
        "text": text,
        "roles": roles,
        "start": start,
        "end": end,
        "limit": limit,
    }
    rows = conn.execute(sql.SQL(ORG_FTS).format(columns=columns), params).fetchall()
    return [(Message.model_validate(r), int(r["fts_rank"])) for r in rows]
