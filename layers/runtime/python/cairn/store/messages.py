"""Messages: immutable, every one kept (recall memory); `context_entries` pick the context."""

from __future__ import annotations

from typing import Literal, NamedTuple

from psycopg import sql
from psycopg.types.json import Jsonb
from pydantic import TypeAdapter

from cairn.domain.base import DEFERRED
from cairn.domain.configs import EmbeddingConfig
from cairn.domain.indexing import indexed_text
from cairn.domain.messages import Message
from cairn.store.db import Connection
from cairn.store.rows import from_row
from cairn.store.sql_text import Native

# Columns the application writes; sequence_id, fts and embedding are the database's.
_WRITTEN = (
    "id",
    "organization_id",
    "agent_id",
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "tool_returns",
    "name",
    "step_id",
    "run_id",
    "group_id",
    "sender_id",
    "otid",
    "batch_item_id",
    "is_err",
    "model",
    "approvals",
    "approve",
    "approval_request_id",
    "denial_reason",
    "created_by_id",
    "created_at",
    "search_text",
)
_WRITABLE = ", ".join(_WRITTEN)
# What a read returns: the message without the search and embedding columns (bytes saved).
_RETURNED = ", ".join((*_WRITTEN[:-1], "sequence_id"))
MESSAGE_COLUMNS = _RETURNED
# A listing also says which were rewound (a client can tell them from the live history).
_LISTED = f"{_RETURNED}, rewound_at"

# Any number of messages in one round trip: the batch travels as one jsonb array.
# ON CONFLICT makes a retried checkpoint (same ids) a no-op instead of an error.
INSERT_MESSAGES = f"""
INSERT INTO messages ({_WRITABLE})
SELECT {_WRITABLE} FROM jsonb_populate_recordset(NULL::messages, %(batch)s)
ON CONFLICT (id) DO NOTHING
RETURNING id, sequence_id
"""
# Planned on every step behind RDS Proxy, about 0.04 ms: a function too (migration 0051).
INSERTING_MESSAGES = Native.of(INSERT_MESSAGES).served("cairn_insert_messages", ("jsonb",))
SELECT_MESSAGE = f"SELECT {_RETURNED} FROM messages WHERE organization_id = %(org)s AND id = %(id)s"
# In the order of the given ids (the context window's order), whatever the sequence says.
# As one JSON text, in the order asked, validated by pydantic's own parser (as the claim
# reads the context window): a thousand messages took 45 ms row by row, half that so.
SELECT_MESSAGES_BY_IDS = f"""
SELECT coalesce(json_agg(found.message ORDER BY wanted.position), '[]')::text AS messages
FROM unnest(%(ids)s::text[]) WITH ORDINALITY AS wanted (id, position)
CROSS JOIN LATERAL (
    SELECT to_json(m) AS message FROM (
        SELECT {_RETURNED} FROM messages
        WHERE id = wanted.id AND organization_id = %(org)s
    ) m
) found
"""
_MESSAGES = TypeAdapter(list[Message], config=DEFERRED)
# Literals, not parameters: the planner drops the filters that are NULL and picks the
# (agent_id, sequence_id) or (organization_id, sequence_id) index accordingly.
LIST_MESSAGES = """
SELECT {columns} FROM messages
WHERE organization_id = {org}
  AND ({agent_id}::text IS NULL OR agent_id = {agent_id})
  AND ({run_id}::text IS NULL OR run_id = {run_id})
  AND ({group_id}::text IS NULL OR group_id = {group_id})
  AND ({after}::text IS NULL OR sequence_id >
       (SELECT sequence_id FROM messages WHERE organization_id = {org} AND id = {after}))
  AND ({before}::text IS NULL OR sequence_id <
       (SELECT sequence_id FROM messages WHERE organization_id = {org} AND id = {before}))
ORDER BY sequence_id {direction} LIMIT {limit}
"""
# Kept by the writes (migration 0010), not counted over the whole history.
COUNT_AGENT_MESSAGES = """
SELECT message_count AS n FROM agents WHERE organization_id = %(org)s AND id = %(agent_id)s
"""


def _row(message: Message) -> dict[str, object]:
    row = message.model_dump(mode="json", exclude={"sequence_id"})
    row["search_text"] = message.search_text()
    return row


def batch_params(messages: list[Message]) -> dict[str, object]:
    return {"batch": Jsonb([_row(m) for m in messages])}


def insert(conn: Connection, messages: list[Message]) -> list[Message]:
    """Insert messages in order; return them with their sequence ids.

    Messages already stored (same id) are returned as stored, so a retry is harmless.
    """
    if not messages:
        return []
    assigned = {
        r["id"]: r["sequence_id"]
        for r in INSERTING_MESSAGES.execute(conn, batch_params(messages)).fetchall()
    }
    missing = [m.id for m in messages if m.id not in assigned]
    if missing:
        org = messages[0].organization_id
        assigned.update({m.id: m.sequence_id for m in get_many(conn, org, missing)})
    return [m.model_copy(update={"sequence_id": assigned.get(m.id)}) for m in messages]


def get(conn: Connection, org_id: str, message_id: str) -> Message | None:
    row = conn.execute(SELECT_MESSAGE, {"org": org_id, "id": message_id}).fetchone()
    return from_row(Message, row)


def get_many(conn: Connection, org_id: str, message_ids: list[str]) -> list[Message]:
    if not message_ids:
        return []
    row = conn.execute(SELECT_MESSAGES_BY_IDS, {"org": org_id, "ids": message_ids}).fetchone()
    return _MESSAGES.validate_json(row["messages"]) if row is not None else []


def list_for_agent(
    conn: Connection,
    org_id: str,
    agent_id: str | None,
    *,
    run_id: str | None = None,
    group_id: str | None = None,
    after: str | None = None,
    before: str | None = None,
    limit: int = 100,
    order: Literal["asc", "desc"] = "desc",
) -> list[Message]:
    """Stored history in sequence order; `after`/`before` are message ids, chronological.
    Without an agent: every agent's messages in the organization (one global sequence);
    with `group_id`, only those said in that group."""
    query = sql.SQL(LIST_MESSAGES).format(
        columns=sql.SQL(_LISTED),
        org=sql.Literal(org_id),
        agent_id=sql.Literal(agent_id),
        run_id=sql.Literal(run_id),
        group_id=sql.Literal(group_id),
        after=sql.Literal(after),
        before=sql.Literal(before),
        direction=sql.SQL("ASC" if order == "asc" else "DESC"),
        limit=sql.Literal(limit),
    )
    return [Message.model_validate(r) for r in conn.execute(query).fetchall()]


SELECT_RUNS_MESSAGES = f"""
SELECT {_RETURNED} FROM messages
WHERE organization_id = %(org)s AND run_id = ANY(%(run_ids)s)
ORDER BY sequence_id
"""


def for_runs(conn: Connection, org_id: str, run_ids: list[str]) -> list[Message]:
    """Every message of these runs (of any agents), in the order they were stored."""
    rows = conn.execute(SELECT_RUNS_MESSAGES, {"org": org_id, "run_ids": run_ids}).fetchall()
    return [Message.model_validate(r) for r in rows]


def count_for_agent(conn: Connection, org_id: str, agent_id: str) -> int:
    row = conn.execute(COUNT_AGENT_MESSAGES, {"org": org_id, "agent_id": agent_id}).fetchone()
    return int(row["n"]) if row else 0


REWRITE_CONTENT = """
UPDATE messages SET content = %(content)s, search_text = %(search_text)s
WHERE organization_id = %(org)s AND id = %(id)s
"""


def rewrite_params(message: Message) -> dict[str, object]:
    return {
        "org": message.organization_id,
        "id": message.id,
        "content": Jsonb([p.model_dump(mode="json") for p in message.content]),
        "search_text": message.search_text(),
    }


def rewrite_content(conn: Connection, message: Message) -> None:
    """Replace a message's content in place: only the system message is ever rewritten."""
    conn.execute(REWRITE_CONTENT, rewrite_params(message))


# The agent's embedding config with its next texts to embed, so a job costs one read: no
# row means no agent; one row without an id, nothing to embed.
# An agent held back after failures (store.embedding_holds) of its current config.
_HELD_BY = """(h.config IS NOT DISTINCT FROM a.embedding_config
     AND (h.next_try_at IS NULL OR h.next_try_at > now()))"""
_HELD = f"EXISTS (SELECT 1 FROM embedding_holds h WHERE h.agent_id = a.id AND {_HELD_BY})"
TO_EMBED = f"""
WITH a AS (
    SELECT a.id, a.organization_id, a.embedding_config,
           (h.agent_id IS NOT NULL AND {_HELD_BY}) AS held, h.agent_id IS NOT NULL AS failing
    FROM agents a LEFT JOIN embedding_holds h ON h.agent_id = a.id
    WHERE a.organization_id = %(org)s AND a.id = %(agent)s
)
SELECT a.embedding_config, a.held, a.failing, m.id, m.search_text, m.created_at, m.who FROM a
LEFT JOIN LATERAL (
    SELECT id, search_text, created_at, coalesce(name, role) AS who FROM messages
    WHERE organization_id = a.organization_id AND agent_id = a.id AND embedding IS NULL
      AND search_text <> ''
    ORDER BY sequence_id LIMIT %(limit)s
) m ON NOT a.held
"""
# Only rows still without one: two workers embedding the same batch write it once. The
# vectors travel in pgvector's binary form (formatting floats as text cost more than the
# whole round trip). A vector enters the HNSW index (`indexed`) once its agent holds
# VECTOR_INDEX_FROM searchable messages; the batch that finds the agent past it with no
# row in the index yet also moves the agent's earlier vectors there, in the same
# statement (a one-time cost: an HNSW insert each), so its searches walk the index alone.
# Rows written outside it later (a job that read the count before the agent passed it)
# are still found: search compares them one by one (store/search.py).
SET_EMBEDDINGS = """
WITH agent AS (
    SELECT a.searchable_messages >= %(index_from)s AS past FROM agents a
    WHERE a.organization_id = %(org)s AND a.id = %(agent)s
), earlier AS (
    -- Only rows search reads (a rewound one never is), and at most twice the mark: an
    -- agent whose count was wrong must not make this statement outlast its time limit.
    UPDATE messages e SET indexed = true
    WHERE e.id = ANY(ARRAY(  -- the agent's, found first; then each by its key
        SELECT x.id FROM messages x
        WHERE x.organization_id = %(org)s AND x.agent_id = %(agent)s
          AND x.embedding IS NOT NULL AND NOT x.indexed
          AND x.search_text <> '' AND x.rewound_at IS NULL
          AND coalesce((SELECT past FROM agent), false)
          AND NOT EXISTS (SELECT FROM messages i WHERE i.organization_id = %(org)s
                          AND i.agent_id = %(agent)s AND i.indexed)
        LIMIT 2 * %(index_from)s))
)
UPDATE messages m SET embedding = v.embedding, embedding_model = %(model)s,
    indexed = coalesce((SELECT past FROM agent), false)
FROM unnest(%(ids)s::text[], %(vectors)b::vector[]) AS v (id, embedding)
WHERE m.organization_id = %(org)s AND m.id = v.id AND m.embedding IS NULL
"""
# Until an agent holds this many searchable messages, search compares its vectors exactly
# (this many rows: 4.4-5.2 ms of PostgreSQL's CPU at 384 dimensions, 12.2-12.5 at 1,536)
# and writing one costs no HNSW insert (0.9-1.4 ms at 384 dimensions, 2.4-3.5 at 1,536;
# 0.03-0.05 without). Past it, every vector of the agent goes into the index, the earlier
# ones with the first batch past it. Migration 0054 marks the rows of agents already past
# it. bench/message_vectors.py measures both.
VECTOR_INDEX_FROM = 2_000
# Agents with messages still to embed, unless their message embeddings are off (those
# stay full-text only): one probe of `messages_to_embed` per agent, however many messages
# an agent that turned them off keeps without a vector.
AGENTS_TO_EMBED = f"""
SELECT a.organization_id, a.id AS agent_id FROM agents a
WHERE coalesce(a.metadata ->> 'cairn_message_embeddings', 'true') <> 'false'
  AND NOT {_HELD}
  AND EXISTS (SELECT 1 FROM messages m WHERE m.agent_id = a.id
              AND m.embedding IS NULL AND m.search_text <> '')
ORDER BY random() LIMIT %(limit)s
"""


class ToEmbed(NamedTuple):
    config: EmbeddingConfig | None  # None: the server's default
    texts: list[tuple[str, str]]  # (message id, its indexed text); none while held
    held: bool = False  # held back after failures (store.embedding_holds)
    failing: bool = False  # failed before (held or due): a success ends its hold


def to_embed(conn: Connection, org_id: str, agent_id: str, limit: int) -> ToEmbed | None:
    """The agent's next texts without an embedding; None if there is no such agent."""
    rows = conn.execute(TO_EMBED, {"org": org_id, "agent": agent_id, "limit": limit}).fetchall()
    if not rows:
        return None
    config = rows[0]["embedding_config"]
    return ToEmbed(
        EmbeddingConfig.model_validate(config) if config else None,
        [
            (r["id"], indexed_text(r["search_text"], r["created_at"], r["who"]))
            for r in rows
            if r["id"] is not None
        ],
        bool(rows[0]["held"]),
        bool(rows[0]["failing"]),
    )


def set_embeddings(
    conn: Connection,
    org_id: str,
    agent_id: str,
    model: str,
    pairs: list[tuple[str, list[float]]],
    *,
    index_from: int = VECTOR_INDEX_FROM,
) -> int:
    """Write the agent's messages' vectors, each pair (message id, vector)."""
    from pgvector import Vector  # loaded with the connection's vector type anyway

    params = {
        "org": org_id,
        "agent": agent_id,
        "model": model,
        "ids": [i for i, _ in pairs],
        "vectors": [Vector(v) for _, v in pairs],
        "index_from": index_from,
    }
    return conn.execute(SET_EMBEDDINGS, params).rowcount


def agents_to_embed(conn: Connection, limit: int = 100) -> list[tuple[str, str]]:
    rows = conn.execute(AGENTS_TO_EMBED, {"limit": limit}).fetchall()
    return [(r["organization_id"], r["agent_id"]) for r in rows]


SELECT_STEP_MESSAGES = f"""
SELECT {_RETURNED} FROM messages
WHERE organization_id = %(org)s AND step_id = %(step_id)s
ORDER BY sequence_id
"""


def for_step(conn: Connection, org_id: str, step_id: str) -> list[Message]:
    rows = conn.execute(SELECT_STEP_MESSAGES, {"org": org_id, "step_id": step_id}).fetchall()
    return [Message.model_validate(r) for r in rows]


EDIT_MESSAGE = """
UPDATE messages SET content = %(content)s, tool_calls = %(tool_calls)s,
                    search_text = %(search_text)s, embedding = NULL, embedding_model = NULL
WHERE organization_id = %(org)s AND id = %(id)s
"""


# The agent's window moved (migration 0056, whose trigger on the message would move it too):
# first, so the agent's row is taken before the message's, as a step's checkpoint takes them.
MOVE_WINDOW = """
UPDATE agents SET window_stamp = window_stamp + 1
WHERE organization_id = %(org)s AND id = %(agent_id)s
"""


def edit(conn: Connection, message: Message) -> None:
    """A person's edit of a message: its text changes, and its embedding is made again by the
    backfill (a stale vector would find it by words it no longer has)."""
    conn.execute(MOVE_WINDOW, {"org": message.organization_id, "agent_id": message.agent_id})
    params = rewrite_params(message)
    params["tool_calls"] = (
        Jsonb([c.model_dump(mode="json") for c in message.tool_calls])
        if message.tool_calls is not None
        else None
    )
    conn.execute(EDIT_MESSAGE, params)
