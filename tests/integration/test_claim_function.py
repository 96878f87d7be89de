"""The claim as a PL/pgSQL function (migration 0048), what a connection without server-side
prepared statements runs (behind RDS Proxy): the same statement as the one sent directly,
the same claim, a whole turn through it."""

from __future__ import annotations

import psycopg
import pytest

from cairn.domain import Organization
from cairn.store import claim
from cairn.store.db import Database
from cairn.store.sql_text import function_body
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import engine_for, make_agent, send, start_run, user


def test_the_claim_function_runs_the_claim_as_it_is_sent(pg_dsn: str) -> None:
    """A change to CLAIM needs a migration making cairn_claim again: this fails until one
    does, and prints the function as it must be."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(b"PREPARE probe AS " + claim._CLAIM.text)
        probe = conn.execute(
            "SELECT parameter_types::text[], result_types::text[] FROM pg_prepared_statements"
            " WHERE name = 'probe'"
        ).fetchone()
        assert probe is not None
        kinds, results = probe
        shown = conn.execute("EXECUTE probe (" + ", ".join(["NULL"] * len(kinds)) + ")")
        columns = list(zip([c.name for c in shown.description or ()], results, strict=True))
        made = conn.execute(
            "SELECT pg_get_function_identity_arguments(oid), pg_get_function_result(oid), prosrc"
            " FROM pg_proc WHERE proname = 'cairn_claim'"
        ).fetchall()
    wanted = claim._CLAIM.plpgsql("cairn_claim", kinds, columns)
    assert tuple(kinds) == claim.CLAIM_TYPES, wanted
    assert len(made) == 1, wanted
    arguments, result, source = made[0]
    assert arguments == ", ".join(kinds), wanted
    assert result == f"TABLE({', '.join(f'{c} {k}' for c, k in columns)})", wanted
    assert source == function_body(claim._CLAIM), wanted


@pytest.fixture
def unprepared(pg_dsn: str) -> Database:
    db = Database(pg_dsn, max_size=2, prepare=False)
    yield db  # type: ignore[misc]
    db.close()


def test_a_claim_through_the_function_is_the_statements(
    db: Database, unprepared: Database, org: Organization
) -> None:
    with FakeLLM() as fake:
        engine = engine_for(db, fake)
        agent = make_agent(db, org)
        for n in range(3):
            fake.reply(f"answer {n}")
            send(engine, agent, f"question {n}")
        run, *_ = start_run(engine, org.id, agent.id, [user(agent, "and now?")])
    claimed = {}
    for name, on in (("direct", db), ("function", unprepared)):
        with on.connection() as conn:
            claimed[name] = claim.read(
                claim.send(conn, org.id, run.id, 0, lease_seconds=60, agent_id=None)
            )
    direct, through = claimed["direct"], claimed["function"]
    assert through.agent is not None and direct.agent is not None
    assert through.agent.message_ids == direct.agent.message_ids
    assert [m.id for m in through.context] == [m.id for m in direct.context]
    assert [m.model_dump() for m in through.context] == [m.model_dump() for m in direct.context]
    assert through.tools == direct.tools and through.blocks == direct.blocks
    assert (through.recall_count, through.context_positions) == (
        direct.recall_count,
        direct.context_positions,
    )
    # the first claim started the run: the second reads it running
    assert through.run is not None and direct.run is not None and through.run.id == run.id
    changed = {"status", "updated_at"}
    assert through.run.model_dump(exclude=changed) == direct.run.model_dump(exclude=changed)


def test_a_turn_without_prepared_statements_claims_through_the_function(
    unprepared: Database, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[bytes] = []
    function = claim._CLAIM_FUNCTION

    class Seen:
        names = function.names

        def execute(self, conn: psycopg.Connection, params: dict) -> object:  # type: ignore[type-arg]
            used.append(function.text)
            return function.execute(conn, params)

    monkeypatch.setattr(claim, "_CLAIM_FUNCTION", Seen())
    with FakeLLM() as fake:
        engine = engine_for(unprepared, fake)
        agent = make_agent(unprepared, org)
        fake.reply("hello there")
        turn = send(engine, agent, "hi")
    assert turn.run.status == "completed" and used
    assert all(text.startswith(b"SELECT * FROM cairn_claim(") for text in used)
