"""Archival and recall search in Postgres: BM25 over the words, HNSW over the embeddings,
and their fusion, in two statements (store/search_statements.py; docs/memory.md, "How
search ranks").

It runs in one pipelined exchange: `hnsw.iterative_scan` is set for the transaction only
(a session setting would pin RDS Proxy connections), so a selective filter still returns
`limit` rows instead of whatever survived the first `ef_search` candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from psycopg import sql

from cairn.domain.messages import Message
from cairn.domain.passages import Passage
from cairn.store.db import Connection, pipeline
from cairn.store.messages import MESSAGE_COLUMNS
from cairn.store.search_statements import (
    FUSED,
    NO_SIM,
    NO_VECTOR_TOP,
    SIM,
    VECTOR_TOP,
    VECTOR_TOP_EXACT,
    VECTOR_TOP_SPLIT,
    WORDS,
)

# bench/search.py, 100k rows of 384 dimensions: ef_search 64 gives recall@10 0.970 at
# 3.6 ms p50; 100 gives 0.988 at 5.7 ms. Iterative scans extend it when filters need more.
EF_SEARCH = 64
# A query's words searched: Postgres parses a query into a tree one level a word, and a
# query of tens of thousands of words passed its stack limit (an error, not an answer). A
# question is a few hundred characters; a longer one is searched by its start.
MAX_QUERY_CHARS = 2_000
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
            " set_config('hnsw.ef_search', %s, true),"
            # every part of a search reads by an index (one agent's or archive's rows); an
            # agent holding most of a table made the planner count its texts by a scan
            " set_config('enable_seqscan', 'off', true),"
            # and a text's neighbours by the index's order, even when the table's statistics
            # are young (a sort of the whole archive for each neighbour was 6x slower)
            " set_config('enable_sort', 'off', true),"
            # planned for its own values each time: a generic plan (Postgres's choice for a
            # prepared statement after five runs) guesses the word and vector candidates
            # wrong, 4-6x slower. Prepared where the connection prepares, so it is parsed
            # and analysed once: 0.6 ms of the fusion statement's 12-14 (docs/memory.md).
            " set_config('plan_cache_mode', 'force_custom_plan', true)",
            (str(EF_SEARCH),),
        )
        cursor = conn.execute(query, params)
        conn.execute("COMMIT")
        pipelined.sync()
        return cursor.fetchall()


class Ranking(NamedTuple):
    """How a search ranks; the defaults are what LoCoMo's numbers argued (docs/memory.md).

    Each half can be turned off (a search mode, or the ablation in bench/memory.py)."""

    lexical: bool = True  # BM25 over the indexed words
    semantic: bool = True  # cosine similarity to the query's embedding
    # BM25 (Robertson), a word counted once per text: b is how much a long text is
    # discounted, k1 how far. Chat turns are short and of similar length: b = 0.3 beat the
    # usual 0.75 (hit@5 0.639 against 0.595 on LoCoMo); k1 in 0.9-1.5 made no difference.
    k1: float = 1.2
    b: float = 0.3
    # A text's neighbours (the previous and next searchable message, or passage by time)
    # lend it part of their score: "yes, they loved it" answers a question asked in the
    # turn before. Hit@5 0.699 without, 0.709-0.722 anywhere in 0.25-0.5 for words.
    neighbour_words: float = 0.35
    neighbour_meaning: float = 0.1
    next_share: float = 0.5  # the next one lends half what the previous does
    # Candidates each half brings before fusion (at least the results asked for).
    candidates: int = 50
    # Distinct query words searched (each one index lookup): a question has a handful.
    max_terms: int = 32
    # The most rows of other scopes the meaning half's HNSW walk may pass (`exact_vectors`):
    # half of pgvector's hnsw.max_scan_tuples, where an iterative scan gives up.
    hnsw_walk: float = 10_000


DEFAULT = Ranking()


class Scope(NamedTuple):
    """The table searched and which of its rows a search may return."""

    table: str
    where: str  # over alias {a}; every query names the organization
    order: tuple[str, ...]  # the rows' order, for neighbours and ties (alias {a})
    columns: str
    model: type[Any]  # what a row found is read as
    # How many rows it holds and their lengths' sum (BM25's N and average length): kept by
    # the writes for a scope with no filter (counting grew with the whole history: 4-13 ms
    # at 10,000 messages), counted otherwise. Rows of (n, total), summed.
    corpus: str
    unfiltered: str  # true when the search has none of its scope's filters
    # Which rows the table's HNSW index holds (alias {a}; empty: every row with a vector),
    # and whether the scope's owner has any there (a condition read once).
    indexed: str = ""
    index_holds: str = "true"


def _scope_sql(scope: Scope, alias: str) -> str:
    return scope.where.format(a=alias)


def _order(scope: Scope, alias: str, direction: str = "") -> str:
    return ", ".join(f"{c.format(a=alias)}{direction}" for c in scope.order)


def _row(scope: Scope, alias: str) -> str:
    return "(" + ", ".join(c.format(a=alias) for c in scope.order) + ")"


class Hit(NamedTuple):
    """A row found, its fused score (higher is better) and its rank in each half."""

    score: float
    vector_rank: int | None
    fts_rank: int | None


class Words(NamedTuple):
    """The words' half of a search (WORDS): each query word's weight (IDF) in the scope,
    the scope's average length, the best texts by words, best first; and how many texts
    the scope holds against its whole table (`exact_vectors` reads them)."""

    terms: list[str]
    idfs: list[float]
    avgdl: float
    top: list[str]
    n: float = 0.0
    table_rows: float = 0.0


NO_WORDS = Words([], [], 1.0, [])


def exact_vectors(found_by_words: Words, ranking: Ranking) -> bool:
    """Whether the meaning half compares the scope's own rows instead of walking the HNSW
    index every scope shares: when the index would be walked past more than
    `ranking.hnsw_walk` rows of other scopes to find the candidates (a small agent in a
    table of many tenants' messages). A filtered iterative scan reads about candidates x
    table rows / scope rows index entries, and stops short at pgvector's
    hnsw.max_scan_tuples (20,000 by default), returning fewer candidates than asked; the
    exact scan reads the scope's rows once (5-6 us each: 4.9 ms at 700 rows)."""
    if found_by_words.n <= 0 or found_by_words.table_rows <= 0:
        return False  # no count (a search by meaning alone) or no statistics yet
    walk = ranking.candidates * found_by_words.table_rows / found_by_words.n
    return walk > ranking.hnsw_walk


class Search(NamedTuple):
    """What one search looks through: a scope and the values of its filters."""

    scope: Scope
    params: dict[str, Any]


def _statement(
    template: str, scope: Scope, query: Sequence[float] | None, *, exact: bool = False
) -> sql.Composed:
    vt = vector_type(len(query)) if query is not None else sql.SQL("vector")
    pieces: dict[str, Any] = {"table": sql.Identifier(scope.table), "vt": vt}
    pieces["scope_d"] = sql.SQL(_scope_sql(scope, "d"))
    if query is None:
        pieces["vector_top"], pieces["sim"] = sql.SQL(NO_VECTOR_TOP), sql.SQL(NO_SIM)
    else:
        top = VECTOR_TOP_SPLIT if scope.indexed else VECTOR_TOP
        pieces["vector_top"] = sql.SQL(VECTOR_TOP_EXACT if exact else top).format(
            **pieces,
            indexed_d=sql.SQL(scope.indexed.format(a="d")),
            index_holds=sql.SQL(scope.index_holds),
        )
        pieces["sim"] = sql.SQL(SIM).format(**pieces)
    unfiltered = sql.SQL(scope.unfiltered)
    pieces["corpus"] = sql.SQL(scope.corpus).format(**pieces, unfiltered=unfiltered)
    return sql.SQL(template).format(
        **pieces,
        scope_p=sql.SQL(_scope_sql(scope, "p")),
        scope_n=sql.SQL(_scope_sql(scope, "n")),
        row_p=sql.SQL(_row(scope, "p")),
        row_n=sql.SQL(_row(scope, "n")),
        row_d=sql.SQL(_row(scope, "d")),
        desc_p=sql.SQL(_order(scope, "p", " DESC")),
        asc_n=sql.SQL(_order(scope, "n")),
        columns=sql.SQL(scope.columns),
    )


def words(conn: Connection, search: Search, text: str, ranking: Ranking = DEFAULT) -> Words:
    """The words' half: needs no embedding, so it can run while the query is embedded."""
    if not ranking.lexical:
        return NO_WORDS
    values = {
        **search.params,
        "text": text[:MAX_QUERY_CHARS],
        "k1": ranking.k1,
        "b": ranking.b,
        "candidates": ranking.candidates,
        "max_terms": ranking.max_terms,
        "table_name": search.scope.table,
    }
    (row,) = in_transaction(conn, _statement(WORDS, search.scope, None), values)
    return Words(
        row["terms"], row["idfs"], row["avgdl"], row["top"], row["n"], row["table_rows"] or 0
    )


def best(
    conn: Connection,
    search: Search,
    found_by_words: Words,
    query: Sequence[float] | None,
    ranking: Ranking = DEFAULT,
    limit: int = 5,
) -> list[tuple[Any, Hit]]:
    """The scope's rows best first (as its model), words and meaning fused, each with its
    Hit. Without a query vector (no embeddings yet, or turned off) it is words alone."""
    statement, values = fused(search, found_by_words, query, ranking, limit)
    rows = in_transaction(conn, statement, values)
    return [(search.scope.model.model_validate(r), _hit(r)) for r in rows]


def fused(
    search: Search,
    found_by_words: Words,
    query: Sequence[float] | None,
    ranking: Ranking = DEFAULT,
    limit: int = 5,
) -> tuple[sql.Composed, dict[str, Any]]:
    """The second statement of a search, and its values (`best` runs them)."""
    query = query if ranking.semantic else None
    values = {
        **search.params,
        "terms": found_by_words.terms,
        "idfs": found_by_words.idfs,
        "avgdl": found_by_words.avgdl,
        "top": found_by_words.top[: max(ranking.candidates, limit)],
        "k1": ranking.k1,
        "b": ranking.b,
        "nw": ranking.neighbour_words,
        "nm": ranking.neighbour_meaning,
        "share": ranking.next_share,
        "candidates": max(ranking.candidates, limit),
        "limit": limit,
        "q": vector_literal(query) if query is not None else None,
        "dim": len(query) if query is not None else None,
    }
    exact = query is not None and exact_vectors(found_by_words, ranking)
    return _statement(FUSED, search.scope, query, exact=exact), values


# Everything but the embedding itself: results never need it (and 384+ floats a row to
# parse is most of a search's client time).
PASSAGE_SCOPE = Scope(
    table="passages",
    where="""{a}.organization_id = %(org)s AND {a}.archive_id = %(archive_id)s
      AND (%(tags)s::text[] IS NULL
           OR (CASE WHEN %(match_all)s THEN {a}.tags @> %(tags)s ELSE {a}.tags && %(tags)s END))
      AND (%(start)s::timestamptz IS NULL OR {a}.created_at >= %(start)s)
      AND (%(end)s::timestamptz IS NULL OR {a}.created_at <= %(end)s)""",
    order=("{a}.created_at", "{a}.id"),
    columns="d.id, d.organization_id, d.archive_id, d.text, d.embedding_config, d.tags,"
    " d.metadata, d.created_at",
    model=Passage,
    corpus="""SELECT s.passages, s.passage_length FROM archive_stats s
              JOIN archives a ON a.id = s.archive_id AND a.organization_id = %(org)s
              WHERE s.archive_id = %(archive_id)s AND {unfiltered}
              UNION ALL
              SELECT count(*), sum(length(d.fts)) FROM {table} d
              WHERE {scope_d} AND NOT {unfiltered}""",
    unfiltered="""(%(tags)s::text[] IS NULL AND %(start)s::timestamptz IS NULL
                   AND %(end)s::timestamptz IS NULL)""",
)


def passage_search(
    org_id: str,
    archive_id: str,
    *,
    tags: list[str] | None = None,
    match_all: bool = False,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Search:
    """An archive's passages, within the filters."""
    params = {
        "org": org_id,
        "archive_id": archive_id,
        "tags": tags or None,
        "match_all": match_all,
        "start": start,
        "end": end,
    }
    return Search(PASSAGE_SCOPE, params)


def search_passages(
    conn: Connection,
    org_id: str,
    archive_id: str,
    text: str,
    query: Sequence[float] | None,
    *,
    tags: list[str] | None = None,
    match_all: bool = False,
    start: datetime | None = None,
    end: datetime | None = None,
    limit: int = 5,
    ranking: Ranking = DEFAULT,
) -> list[tuple[Passage, Hit]]:
    """An archive's passages by words and meaning fused, best first, within the filters."""
    found = passage_search(org_id, archive_id, tags=tags, match_all=match_all, start=start, end=end)
    return best(conn, found, words(conn, found, text, ranking), query, ranking, limit)


def _hit(row: dict[str, Any]) -> Hit:
    return Hit(float(row["score"]), row["vector_rank"], row["fts_rank"])


# A rewound message (store/history.py) is out of the agent's recall: kept, never found here.
MESSAGE_SCOPE = Scope(
    table="messages",
    where="""{a}.organization_id = %(org)s AND {a}.agent_id = %(agent)s
      AND {a}.search_text <> '' AND {a}.rewound_at IS NULL
      AND (%(roles)s::text[] IS NULL OR {a}.role = ANY(%(roles)s))
      AND (%(start)s::timestamptz IS NULL OR {a}.created_at >= %(start)s)
      AND (%(end)s::timestamptz IS NULL OR {a}.created_at <= %(end)s)""",
    order=("{a}.sequence_id",),
    columns=", ".join(f"d.{c.strip()}" for c in MESSAGE_COLUMNS.split(",")),
    model=Message,
    corpus="""SELECT a.searchable_messages, a.searchable_length FROM agents a
              WHERE a.organization_id = %(org)s AND a.id = %(agent)s AND {unfiltered}
              UNION ALL
              SELECT count(*), sum(length(d.fts)) FROM {table} d
              WHERE {scope_d} AND NOT {unfiltered}""",
    unfiltered="""(%(roles)s::text[] IS NULL AND %(start)s::timestamptz IS NULL
                   AND %(end)s::timestamptz IS NULL)""",
    indexed="{a}.indexed",  # past store.messages.VECTOR_INDEX_FROM (migration 0054)
    index_holds="""EXISTS (SELECT FROM messages i WHERE i.organization_id = %(org)s
                           AND i.agent_id = %(agent)s AND i.indexed)""",
)


def message_search(
    org_id: str,
    agent_id: str,
    *,
    roles: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Search:
    """One agent's searchable messages, within the filters."""
    params = {"org": org_id, "agent": agent_id, "roles": roles, "start": start, "end": end}
    return Search(MESSAGE_SCOPE, params)


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
    ranking: Ranking = DEFAULT,
) -> list[tuple[Message, Hit]]:
    """One agent's messages by words and meaning fused, best first."""
    found = message_search(org_id, agent_id, roles=roles, start=start, end=end)
    return best(conn, found, words(conn, found, text, ranking), query, ranking, limit)


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
        "text": text[:MAX_QUERY_CHARS],
        "roles": roles,
        "start": start,
        "end": end,
        "limit": limit,
    }
    rows = conn.execute(sql.SQL(ORG_FTS).format(columns=columns), params).fetchall()
    return [(Message.model_validate(r), int(r["fts_rank"])) for r in rows]
