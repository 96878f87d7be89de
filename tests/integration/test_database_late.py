"""A database that cannot be reached yet (Aurora resuming from a pause, a failover): a
request waits for it up to its connection timeout, then answers 503 with Retry-After,
never 500; once the database is there the same process serves again, unrestarted."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from cairn.config import Settings
from cairn.domain import Organization, User
from cairn.errors import UnavailableError
from cairn.local.lambdas import invoke
from cairn.orchestration.assembly.build import build_runtime, use_runtime
from cairn.store import tenancy
from cairn.store.db import Database
from tests.integration.test_handlers import event


class LateDoor:
    """A port that refuses connections until `open()`, then forwards them to the database."""

    def __init__(self, target: tuple[str, int] | str) -> None:
        self.target = target  # (host, port), or a Unix socket's path
        with socket.socket() as probe:  # a free port, closed again: connections are refused
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    def open(self) -> None:
        server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._serve, args=(server,), daemon=True).start()

    def _serve(self, server: socket.socket) -> None:
        while True:
            client, _ = server.accept()
            if isinstance(self.target, str):
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(self.target)
            else:
                upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            with contextlib.suppress(OSError):
                while data := source.recv(65536):
                    sink.sendall(data)
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def late(pg_dsn: str) -> Iterator[tuple[LateDoor, str]]:
    info = conninfo_to_dict(pg_dsn)
    host, port = str(info.get("host") or "127.0.0.1"), int(info.get("port") or 5432)
    door = LateDoor(f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port))
    yield door, make_conninfo(pg_dsn, host="127.0.0.1", port=door.port)


def eventually(probe: object, seconds: float = 60) -> object:
    deadline = time.monotonic() + seconds
    while True:
        try:
            return probe()  # type: ignore[operator]
        except UnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_store_says_unavailable_then_serves_once_the_database_is_there(
    late: tuple[LateDoor, str],
) -> None:
    door, dsn = late
    db = Database(dsn, connect_timeout=1)
    try:
        started = time.monotonic()
        with pytest.raises(UnavailableError, match="cannot be reached"), db.connection() as conn:
            conn.execute("SELECT 1")
        assert time.monotonic() - started < 10  # the timeout, not a hang
        door.open()

        def answer() -> object:
            with db.connection() as conn:
                row = conn.execute("SELECT 41 + 1 AS n").fetchone()
                return row and row["n"]

        assert eventually(answer) == 42
    finally:
        db.close()


def test_a_request_while_the_database_resumes_is_a_503_with_retry_after(
    late: tuple[LateDoor, str], db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="late"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    door, dsn = late
    slow = Database(dsn, connect_timeout=1)
    use_runtime(build_runtime(Settings(openai_api_key="sk-test"), db=slow))
    monkeypatch.setenv("CAIRN_API_KEY", key)
    request = event("api/agents-list.json")
    request["headers"]["authorization"] = f"Bearer {key}"
    try:
        answer = invoke("api", request)
        assert answer["statusCode"] == 503, answer
        assert answer["headers"]["Retry-After"] == "5"
        assert "cannot be reached" in json.loads(answer["body"])["detail"]
        door.open()

        def served() -> object:
            got = invoke("api", request)
            if got["statusCode"] == 503:
                raise UnavailableError("not yet")
            return got["statusCode"]

        assert eventually(served) == 200
    finally:
        use_runtime(None)
        slow.close()


def test_a_busy_pool_is_a_503_too_and_keeps_its_connections(pg_dsn: str) -> None:
    db = Database(pg_dsn, max_size=1, connect_timeout=0.5)
    try:
        with db.connection() as held:
            with pytest.raises(UnavailableError, match="in use"), db.connection():
                pass
            row = held.execute("SELECT 1 AS n").fetchone()  # not closed by the busy answer
            assert row is not None and row["n"] == 1
        with db.connection() as conn:
            assert conn.execute("SELECT 2 AS n").fetchone() == {"n": 2}
    finally:
        db.close()
