"""A step's rows keep no foreign key (migration 0042: each was a check a row, ten a message);
what the keys did is done by the writes and deletions that hold the agent or run row."""

from __future__ import annotations

import threading

import psycopg
import pytest

from cairn.domain import Message, Run, TextContent
from cairn.store import Database, agents, messages, runs
from tests.integration.world import World, build_world


def rows_of(conn: psycopg.Connection, agent_id: str) -> dict[str, int]:
    return {
        table: conn.execute(
            f"SELECT count(*) AS n FROM {table} WHERE agent_id = %s", (agent_id,)
        ).fetchone()["n"]
        for table in agents.KEYLESS
    }


def with_window(conn: psycopg.Connection, world: World) -> None:
    """The world's agent with its message in its window: a place, a change, a version."""
    agent = agents.get(conn, world.org.id, world.agent.id)
    assert agent is not None
    agents.update(
        conn,
        agent.model_copy(update={"message_ids": [world.message.id]}),
        expected_version=agent.version,
    )


def test_an_agents_deletion_takes_every_row_of_it(db: Database) -> None:
    with db.transaction() as conn:
        world, other = build_world(conn), build_world(conn, "globex")
        with_window(conn, world)
        with_window(conn, other)
        assert all(rows_of(conn, world.agent.id).values()), rows_of(conn, world.agent.id)
        kept = rows_of(conn, other.agent.id)
        assert agents.delete(conn, world.org.id, world.agent.id)
        assert set(rows_of(conn, world.agent.id).values()) == {0}
        assert rows_of(conn, other.agent.id) == kept  # another agent's rows untouched
        assert not agents.delete(conn, world.org.id, world.agent.id)


def test_a_message_for_an_agent_that_is_gone_is_refused_as_a_key_refused_it(db: Database) -> None:
    with db.transaction() as conn:
        world = build_world(conn)
        assert agents.delete(conn, world.org.id, world.agent.id)
    stray = Message(
        organization_id=world.org.id,
        agent_id=world.agent.id,
        role="user",
        content=[TextContent(text="hello?")],
    )
    refused = pytest.raises(psycopg.errors.ForeignKeyViolation, match="agent does not exist")
    with refused, db.transaction() as conn:
        messages.insert(conn, [stray])
    with db.connection() as conn:
        assert messages.get(conn, world.org.id, stray.id) is None


def test_a_deletion_waits_for_a_writer_holding_the_agent_and_takes_what_it_wrote(
    db: Database,
) -> None:
    """The race the keys closed: a message written while the agent is being deleted."""
    with db.transaction() as conn:
        world = build_world(conn)
    writing = threading.Event()
    deleted = threading.Event()
    late = Message(
        organization_id=world.org.id,
        agent_id=world.agent.id,
        role="user",
        content=[TextContent(text="written meanwhile")],
    )

    def delete() -> None:
        writing.wait(10)
        with db.transaction() as conn:
            agents.delete(conn, world.org.id, world.agent.id)
        deleted.set()

    deleting = threading.Thread(target=delete)
    deleting.start()
    with db.transaction() as conn:
        messages.insert(conn, [late])  # the count's trigger holds the agent's row
        writing.set()
        assert not deleted.wait(0.5)  # the deletion waits for this transaction
    deleting.join(10)
    assert deleted.is_set()
    with db.connection() as conn:
        assert set(rows_of(conn, world.agent.id).values()) == {0}


def test_a_runs_deletion_takes_its_steps_and_outbox_rows(db: Database) -> None:
    with db.transaction() as conn:
        world = build_world(conn)
        kept = runs.create_run(conn, Run(organization_id=world.org.id, agent_id=world.agent.id))
        conn.execute("UPDATE runs SET status = 'completed' WHERE id = %s", (world.run.id,))
        assert runs.delete_ended(conn, world.org.id, world.run.id)
        for table in ("steps", "outbox"):
            left = conn.execute(
                f"SELECT count(*) AS n FROM {table} WHERE run_id = %s", (world.run.id,)
            )
            assert left.fetchone()["n"] == 0
        assert not runs.delete_ended(conn, world.org.id, kept.id)  # still going: kept
