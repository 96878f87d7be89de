"""A statement failing inside a pipeline must not leave psycopg believing a later statement
of that pipeline is prepared on the server (it was never run): every later use of it on
the connection failed with 'prepared statement "_pg3_N" does not exist' (seen as twelve
500s in a row once a hostile send had failed inside `runs.start_run`'s pipeline)."""

from __future__ import annotations

import psycopg
import pytest

from cairn.store.db import PREPARE_AFTER, Database, pipeline


@pytest.mark.parametrize("warm", range(PREPARE_AFTER + 2))
def test_a_failed_pipeline_leaves_no_statement_half_prepared(pg_dsn: str, warm: int) -> None:
    db = Database(pg_dsn)
    try:
        with db.connection() as conn:
            query = "SELECT %(n)s::int AS n"
            for n in range(warm):
                conn.execute(query, {"n": n})
            with pytest.raises(psycopg.errors.DivisionByZero), pipeline(conn):
                conn.execute("SELECT 1 / 0")
                conn.execute(query, {"n": 99})  # would be prepared here; never runs
            for n in range(3):  # prepared now, and used as prepared
                row = conn.execute(query, {"n": n}).fetchone()
                assert row is not None and row["n"] == n
    finally:
        db.close()


@pytest.mark.parametrize("bad", ["a\x00b", "x"], ids=["refused by psycopg", "by the server"])
def test_statements_prepared_between_two_failed_pipelines_still_run(pg_dsn: str, bad: str) -> None:
    """Twice on one connection, as on a warm function's only one: the second clean-up
    emptied the server's prepared statements behind psycopg's back, and every later
    prepared statement failed (every request, starting with the key's check)."""
    db = Database(pg_dsn, max_size=1)
    query = "SELECT %(n)s::int + 1 AS n"

    def fail() -> None:
        with pytest.raises(psycopg.Error), db.connection() as conn, pipeline(conn):
            conn.execute("SELECT 1 AS one")
            conn.execute("SELECT %(t)s::int AS t", {"t": bad})

    try:
        for _ in range(3):
            fail()
            fail()  # the clean-up now finds nothing prepared: psycopg once kept count of it
            for n in range(PREPARE_AFTER + 2):  # prepared from its third use
                with db.connection() as conn:
                    assert conn.execute(query, {"n": n}).fetchone() == {"n": n + 1}
    finally:
        db.close()
