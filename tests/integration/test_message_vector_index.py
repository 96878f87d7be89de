"""Migration 0054 on a database that already holds embedded messages: the rows of agents
past store.messages.VECTOR_INDEX_FROM go into the remade HNSW index, the others leave it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from cairn.domain import Organization
from cairn.domain.messages import Message, TextContent
from cairn.embeddings.base import HashEmbedder
from cairn.store import messages, tenancy
from cairn.store.db import Database
from cairn.store.messages import VECTOR_INDEX_FROM
from cairn.store.migrate import apply_migrations, available_migrations
from tests.integration.engine_harness import make_agent

MIGRATION = "0054_message_vector_index"


@pytest.fixture
def before_0054(pg_dsn: str) -> Iterator[str]:
    """A database of its own with every migration before 0054."""
    name = f"m0054_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = make_conninfo(pg_dsn, dbname=name)
    apply_migrations(url, [m for m in available_migrations() if m.version < MIGRATION])
    yield url
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SET statement_timeout = 0")  # a drop waits on a checkpoint
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_the_migration_indexes_the_vectors_of_agents_past_the_mark_only(before_0054: str) -> None:
    db = Database(before_0054, max_size=2)
    try:
        with db.transaction() as conn:
            org = tenancy.create_organization(conn, Organization(name="m0054"))
        big, small = make_agent(db, org), make_agent(db, org)
        vector = "[" + ",".join(map(str, HashEmbedder(384).embed(["the heron"])[0])) + "]"
        with db.transaction() as conn:
            for agent in (big, small):
                messages.insert(
                    conn,
                    [
                        Message(
                            organization_id=org.id,
                            agent_id=agent.id,
                            role="user",
                            content=[TextContent(text=f"the heron, {n}")],
                        )
                        for n in range(3)
                    ],
                )
                # as the embedding job wrote them before 0054
                conn.execute(
                    "UPDATE messages SET embedding = %s::vector WHERE agent_id = %s",
                    (vector, agent.id),
                )
            # the kept count of an agent past the mark (its other messages left out here)
            conn.execute(
                "UPDATE agents SET searchable_messages = %s WHERE id = %s",
                (VECTOR_INDEX_FROM, big.id),
            )
        assert apply_migrations(before_0054)[0] == MIGRATION
        with db.connection() as conn:
            rows = conn.execute(
                "SELECT agent_id, bool_and(indexed) AS all_in, bool_or(indexed) AS any_in"
                " FROM messages GROUP BY agent_id"
            ).fetchall()
            # what the index holds: the big agent's rows, every one found through it
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET enable_sort = off")  # the index's own order, not a sort
            nearest = (
                "SELECT id FROM messages WHERE indexed AND vector_dims(embedding) = 384"
                " ORDER BY embedding::vector(384) <=> %s::vector(384) LIMIT 10"
            )
            plan = conn.execute(b"EXPLAIN " + nearest.encode(), (vector,)).fetchall()
            through_index = {r["id"] for r in conn.execute(nearest, (vector,))}
            big_rows = {
                r["id"]
                for r in conn.execute(
                    "SELECT id FROM messages WHERE agent_id = %s AND embedding IS NOT NULL",
                    (big.id,),
                )
            }
        found = {r["agent_id"]: (r["all_in"], r["any_in"]) for r in rows}
        assert found == {big.id: (True, True), small.id: (False, False)}
        assert "Index Scan using messages_embedding_384" in str(plan)
        assert len(big_rows) >= 3 and through_index == big_rows
    finally:
        db.close()
