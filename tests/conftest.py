"""Suite-wide fixtures: one PostgreSQL for the whole session, wiped between tests; the
tiers' markers; and two guards: no provider key of the environment reaches a test, and no
test connects anywhere but this machine (a test that would is told which address)."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from cairn.domain import Organization, User
from cairn.store import Database
from cairn.store import tenancy as tenancy_store
from cairn.store.migrate import apply_migrations

# Keys that would let a test call a real model or service: taken out of the environment
# before anything reads it (Settings.from_env, the SDKs' own defaults); `provider_keys`
# gives them back to a test that means to use them.
PROVIDER_KEYS = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GEMINI_BASE_URL",
    "GOOGLE_API_KEY",
    "EXA_API_KEY",
    "CAIRN_PROVIDER_SECRET_ARN",
)
_TAKEN = {name: os.environ.pop(name) for name in PROVIDER_KEYS if name in os.environ}


@pytest.fixture
def provider_keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The provider keys the environment had (a test that calls real providers asks)."""
    for name, value in _TAKEN.items():
        monkeypatch.setenv(name, value)
    return dict(_TAKEN)


class OutsideConnection(ConnectionRefusedError):
    """A test tried to reach a machine other than this one. A refused connection, so that
    a library probing (botocore for the instance metadata service) fails as it would
    offline, and everything else fails with this message."""


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def _local_only(address: Any) -> None:
    if not isinstance(address, tuple):  # a Unix socket (PostgreSQL's, the egress proxy's)
        return
    host = str(address[0]).split("%")[0]
    if host == "localhost":
        return
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise OutsideConnection(f"a test connected to {host!r} by name, not address") from None
    if not (ip.is_loopback or ip.is_unspecified):
        raise OutsideConnection(
            f"a test connected to {address[0]}:{address[1]}: tests reach only this machine "
            "(a fake server on loopback stands for any other)"
        )


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _local_only(address)
    _connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _local_only(address)
    return _connect_ex(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


# The tiers (README "Tests"): each test is marked by what it needs; `make check` runs those
# that need none of these.
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path)
        if "/tests/e2e/" in path:
            item.add_marker(pytest.mark.e2e)
        if "/tests/infra/" in path:
            item.add_marker(pytest.mark.infra)
        if item.path.name == "test_console.py":
            item.add_marker(pytest.mark.browser)
        if "pg_dsn" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.db)


@pytest.fixture(scope="session")
def pg_dsn(worker_id: str) -> Iterator[str]:
    """A fresh embedded server for each test process, or, with DATABASE_URL (any PostgreSQL
    >= 15 with pgvector), a database of each process's own on that server."""
    if url := os.environ.get("DATABASE_URL"):
        with _database_of_its_own(url, worker_id) as dsn:
            apply_migrations(dsn)
            yield dsn
        return
    from cairn.local.postgres import start_embedded

    tmp = Path(tempfile.mkdtemp(prefix="cairn-test-"))
    dsn, server = start_embedded(tmp / "pgdata", cleanup="delete")
    try:
        apply_migrations(dsn)
        yield dsn
    finally:
        server.cleanup()  # type: ignore[attr-defined]
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _database_of_its_own(url: str, worker_id: str) -> Iterator[str]:
    """DATABASE_URL itself for a single process; under pytest-xdist, a database per worker
    on its server (the tests wipe their tables between tests: two processes cannot share)."""
    if worker_id == "master":
        yield url
        return
    name = f"cairn_test_{worker_id}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET statement_timeout = 0")  # a drop waits on a checkpoint
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield make_conninfo(url, dbname=name)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET statement_timeout = 0")
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# CAIRN_TEST_PREPARED=0: nothing prepared, as behind RDS Proxy, where the step's statements
# run as their functions (migrations 0048-0051; `make test-unprepared` runs the engine's
# tests so).
PREPARED = os.environ.get("CAIRN_TEST_PREPARED", "1") != "0"


@pytest.fixture(scope="session")
def database(pg_dsn: str) -> Iterator[Database]:
    db = Database(pg_dsn, max_size=8, prepare=PREPARED)
    db.open()
    yield db
    db.close()


# Every tenant-owned table hangs off organizations by its keys, but for a step's rows, which
# keep none (migration 0042: an agent's or run's deletion removes them).
EMPTY_EVERY_TENANT = (
    "TRUNCATE organizations, messages, context_entries, context_changes, agent_versions,"
    " steps, outbox CASCADE"
)


@pytest.fixture
def db(database: Database) -> Database:
    """The database, empty. The TRUNCATE locks every table at once: a statement still in
    flight from the test before (a daemon worker's last query) may take its locks in
    another order, and PostgreSQL ends one of the two as a deadlock (seen once in CI):
    the emptying is tried again, as any client retries a deadlock."""
    for attempt in range(5):
        try:
            with database.connection() as conn:
                conn.execute(EMPTY_EVERY_TENANT)
            break
        except psycopg.errors.DeadlockDetected:
            if attempt == 4:
                raise
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
