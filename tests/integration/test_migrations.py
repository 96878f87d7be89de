"""The migration runner on real PostgreSQL: from empty, re-run, and two runners at once."""

from __future__ import annotations

import threading

import psycopg
import pytest

from cairn.store import agents
from cairn.store.migrate import Migration, apply_migrations, available_migrations


def tables(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
    return {r[0] for r in rows}


def test_migrations_from_empty_create_every_table(empty_schema_dsn: str) -> None:
    applied = apply_migrations(empty_schema_dsn)

    assert applied == [m.version for m in available_migrations()]
    assert {
        "schema_migrations",
        "organizations",
        "users",
        "api_keys",
        "agents",
        "blocks",
        "block_history",
        "agents_blocks",
        "tools",
        "agents_tools",
        "messages",
        "archives",
        "archives_agents",
        "passages",
        "runs",
        "steps",
        "step_journal",
        "outbox",
        "groups",
        "groups_agents",
    } <= tables(empty_schema_dsn)


def test_rerun_applies_nothing(empty_schema_dsn: str) -> None:
    apply_migrations(empty_schema_dsn)
    assert apply_migrations(empty_schema_dsn) == []
    with psycopg.connect(empty_schema_dsn) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert sorted(versions) == [m.version for m in available_migrations()]


def test_two_concurrent_runners_apply_each_migration_once(empty_schema_dsn: str) -> None:
    results: list[list[str]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        try:
            barrier.wait()
            results.append(apply_migrations(empty_schema_dsn))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    all_versions = [m.version for m in available_migrations()]
    # One runner applied everything; the other waited on the lock and found nothing to do.
    assert sorted(results, key=len) == [[], all_versions]


def test_failed_migration_leaves_nothing_and_is_retried(empty_schema_dsn: str) -> None:
    good = available_migrations()
    broken = Migration("9999_broken", "CREATE TABLE half_done (id int); SELECT 1/0;")

    with pytest.raises(psycopg.errors.DivisionByZero):
        apply_migrations(empty_schema_dsn, [*good, broken])

    assert "half_done" not in tables(empty_schema_dsn)
    fixed = Migration("9999_broken", "CREATE TABLE half_done (id int);")
    assert apply_migrations(empty_schema_dsn, [*good, fixed]) == ["9999_broken"]


def test_every_row_an_organization_owns_goes_with_it(pg_dsn: str) -> None:
    """Each table with an `organization_id` cascades from a row that goes when its
    organization goes (the organization itself, or an agent, run or config of it), or is one
    of a step's tables that keep no key and go with their agent (store/agents.KEYLESS, held
    by test_an_agents_deletion_takes_every_row_of_it): nothing an organization owned,
    secrets least of all, outlives it."""
    with psycopg.connect(pg_dsn) as conn:
        owned = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.columns WHERE column_name ="
                " 'organization_id' AND table_schema = 'public' AND table_name <> 'organizations'"
            )
        }
        cascading = {
            row[0]
            for row in conn.execute(
                "SELECT conrelid::regclass::text FROM pg_constraint"
                " WHERE contype = 'f' AND confdeltype = 'c'"
            )
        }
    assert len(owned) > 20
    assert owned - cascading - set(agents.KEYLESS) == set(), "rows that outlive their organization"
