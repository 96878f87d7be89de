"""Suite-wide fixtures: one PostgreSQL for the whole session, wiped between tests."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from cairn.domain import Organization, User
from cairn.store import Database
from cairn.store import tenancy as tenancy_store
from cairn.store.migrate import apply_migrations


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """DATABASE_URL if set (any PostgreSQL >= 15 with pgvector), else a fresh embedded server."""
    if url := os.environ.get("DATABASE_URL"):
        apply_migrations(url)
        yield url
        return
    from cairn.local.postgres import start_embedded

    tmp = Path(tempfile.mkdtemp(prefix="cairn-test-"))
    dsn, server = start_embedded(tmp / "pgdata", cleanup="delete")
    apply_migrations(dsn)
    try:
        yield dsn
    finally:
        server.cleanup()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def database(pg_dsn: str) -> Iterator[Database]:
    db = Database(pg_dsn, max_size=8)
    db.open()
    yield db
    db.close()


@pytest.fixture
def db(database: Database) -> Database:
    """The database, empty: every tenant-owned table hangs off organizations."""
    with database.connection() as conn:
        conn.execute("TRUNCATE organizations CASCADE")
    return database


@pytest.fixture
def org(db: Database) -> Organization:
    with db.transaction() as conn:
        return tenancy_store.create_organization(conn, Organization(name="acme"))


@pytest.fixture
def user(db: Database, org: Organization) -> User:
    with db.transaction() as conn:
        return tenancy_store.create_user(conn, User(organization_id=org.id, name="ada"))


@pytest.fixture
def empty_schema_dsn(pg_dsn: str) -> Iterator[str]:
    """A DSN whose tables land in a new, empty schema (extensions stay in public)."""
    schema = f"mig_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield make_conninfo(pg_dsn, options=f"-c search_path={schema},public")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
