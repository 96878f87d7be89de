"""Statements made PL/pgSQL functions (migrations 0048-0051), what a connection
without server-side prepared statements runs (behind RDS Proxy): each the same statement as
the one sent directly, the same claim, a whole turn through them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import psycopg
import pytest

from cairn.domain import Organization
from cairn.store import (
    checkpoints,
    claim,
    context,
    history,
    limits,
    messages,
    outbox,
    runs,
    steps,
    tenancy,
)
from cairn.store.db import Database
from cairn.store.sql_text import Served, function_body
from tests.fakes.llm_server import FakeLLM
from tests.integration.engine_harness import engine_for, make_agent, send, start_run, user


@pytest.mark.parametrize(
    "served",
    [
        claim.CLAIMING,
        runs.STARTING,
        history.INSERTING_VERSION,
        context.INSERTING_ENTRIES,
        checkpoints.CHECKPOINTING_AGENT,
        outbox.WAITING,
        steps.INSERTING_STEP,
        messages.INSERTING_MESSAGES,
        checkpoints.FINISHING_RUN,
        history.INSERTING_CHANGES,
        limits.ADDING_TO_MONTH,
        tenancy.AUTHENTICATING,
    ],
    ids=lambda s: s.name,
)
def test_each_function_runs_its_statement_as_it_is_sent(pg_dsn: str, served: Served) -> None:
    """A change to the statement needs a migration making its function again: this fails
    until one does, and prints the function as it must be (`Native.plpgsql`)."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(b"PREPARE probe AS " + served.statement.text)
        probe = conn.execute(
            "SELECT parameter_types::text[], result_types::text[] FROM pg_prepared_statements"
            " WHERE name = 'probe'"
        ).fetchone()
        assert probe is not None
        kinds, results = probe
        described = conn.pgconn.describe_prepared(b"probe")
        names = [(described.fname(i) or b"").decode() for i in range(described.nfields)]
        columns = list(zip(names, results or [], strict=True))  # none: returns void
        made = conn.execute(
            "SELECT pg_get_function_identity_arguments(oid), pg_get_function_result(oid), prosrc"
            " FROM pg_proc WHERE proname = %s",
            (served.name,),
        ).fetchall()
    wanted = served.statement.plpgsql(served.name, kinds, columns)
    assert tuple(kinds) == served.types, wanted
    assert len(made) == 1, wanted
    arguments, result, source = made[0]
    assert arguments == ", ".join(kinds), wanted
    returns = f"TABLE({', '.join(f'{c} {k}' for c, k in columns)})" if columns else "void"
    assert result == returns, wanted
    assert source == function_body(served.statement, rows=bool(columns)), wanted


@pytest.fixture
def unprepared(pg_dsn: str) -> Iterator[Database]:
    db = Database(pg_dsn, max_size=2, prepare=False)
    yield db
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


def test_a_turn_without_prepared_statements_goes_through_the_functions(
    unprepared: Database, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    used: list[bytes] = []

    class Seen:
        def __init__(self, call: object) -> None:
            self.call = call
            self.names = call.names

        def execute(self, conn: psycopg.Connection, params: dict) -> object:  # type: ignore[type-arg]
            used.append(self.call.text)
            return self.call.execute(conn, params)

    for module, name in (
        (claim, "CLAIMING"),
        (runs, "STARTING"),
        (history, "INSERTING_VERSION"),
        (context, "INSERTING_ENTRIES"),
        (checkpoints, "CHECKPOINTING_AGENT"),
        (outbox, "WAITING"),
        (steps, "INSERTING_STEP"),
        (messages, "INSERTING_MESSAGES"),
        (checkpoints, "FINISHING_RUN"),
        (history, "INSERTING_CHANGES"),
    ):
        served = getattr(module, name)
        monkeypatch.setattr(module, name, dataclasses.replace(served, call=Seen(served.call)))
    with FakeLLM() as fake:
        engine = engine_for(unprepared, fake)
        agent = make_agent(unprepared, org)
        fake.reply("hello there")
        turn = send(engine, agent, "hi")
    assert turn.run.status == "completed"
    called = {text.split(b"(")[0] for text in used}
    assert called == {
        b"SELECT * FROM cairn_start_run",
        b"SELECT * FROM cairn_claim_2",
        b"SELECT * FROM cairn_insert_version",
        b"SELECT * FROM cairn_insert_entries",
        b"SELECT * FROM cairn_checkpoint_agent",
        b"SELECT * FROM cairn_waiting_for_release",
        b"SELECT * FROM cairn_insert_step",
        b"SELECT * FROM cairn_insert_messages",
        b"SELECT * FROM cairn_finish_run",
        b"SELECT * FROM cairn_insert_changes",
    }, called


def test_a_served_statement_is_prepared_at_its_first_run(pg_dsn: str) -> None:
    """A step's statements run on every step: where the connection prepares statements, the
    first run prepares them, rather than the third (two plans in full saved a connection)."""
    on = Database(pg_dsn, max_size=1)
    try:
        with on.connection() as conn:
            assert (
                tenancy.AUTHENTICATING.execute(conn, {"key_hash": "no such key"}).fetchall() == []
            )
            prepared = conn.execute(
                "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = %s",
                (tenancy.AUTHENTICATING.statement.text.decode(),),
            ).fetchone()
            assert prepared == {"n": 1}
    finally:
        on.close()
    unprepared = Database(pg_dsn, max_size=1, prepare=False)
    try:
        with unprepared.connection() as conn:
            tenancy.AUTHENTICATING.execute(conn, {"key_hash": "no such key"}).fetchall()
            assert conn.execute("SELECT count(*) AS n FROM pg_prepared_statements").fetchone() == {
                "n": 0
            }
    finally:
        unprepared.close()
