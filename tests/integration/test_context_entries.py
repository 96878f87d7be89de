"""The context window is stored as entries: a step writes the entries of its new messages
and nothing of the window it kept (issue: constant-cost steps)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cairn.domain import Organization
from cairn.store import agents
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import engine_for, make_agent, send


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def entries(db: Database, agent_id: str) -> dict[tuple[int, str], int]:
    """The agent's entries, each with the transaction that last wrote it (xmin)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT position, message_id, xmin::text::bigint AS written FROM context_entries"
            " WHERE agent_id = %s ORDER BY position",
            (agent_id,),
        ).fetchall()
    return {(r["position"], r["message_id"]): r["written"] for r in rows}


def test_a_step_writes_the_entries_of_its_messages_and_leaves_the_rest_alone(
    db: Database, org: Organization, fake: FakeLLM
) -> None:
    agent = make_agent(db, org)
    engine = engine_for(db, fake)
    for n in range(5):
        fake.reply(f"answer {n}")
        send(engine, agent, f"question {n}")
    before = entries(db, agent.id)

    fake.reply("the last answer")
    turn = send(engine, agent, "one more question")

    after = entries(db, agent.id)
    kept = {e: w for e, w in after.items() if e in before}
    assert kept == before  # not one entry of the window it kept was rewritten
    added = [message_id for _, message_id in sorted(set(after) - set(before))]
    assert added == [m.id for m in turn.new]  # one entry per new message, in order
    with db.connection() as conn:
        stored = agents.get(conn, org.id, agent.id)
    assert stored is not None
    assert stored.message_ids == [message_id for _, message_id in sorted(after)]


def test_a_message_id_of_no_message_is_refused_and_nothing_is_written(
    db: Database, org: Organization
) -> None:
    from cairn.errors import NotFoundError

    agent = make_agent(db, org)
    before = entries(db, agent.id)
    missing = "message-00000000-0000-4000-8000-000000000000"
    with pytest.raises(NotFoundError, match=missing), db.transaction() as conn:
        current = agents.get(conn, org.id, agent.id)
        assert current is not None
        changed = current.model_copy(update={"message_ids": [*current.message_ids, missing]})
        agents.update(conn, changed, expected_version=current.version)
    assert entries(db, agent.id) == before
