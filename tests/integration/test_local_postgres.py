"""The embedded PostgreSQL of the local stack asks every connection for its password."""

from __future__ import annotations

import stat
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from cairn.local.postgres import require_password, start_embedded


def test_the_local_server_refuses_connections_without_the_password(tmp_path: Path) -> None:
    pgdata = tmp_path / "pgdata"
    dsn, server = start_embedded(pgdata, cleanup="delete")
    try:
        params = conninfo_to_dict(dsn)
        assert params.get("password")
        secret = tmp_path / "pgdata.password"
        assert stat.S_IMODE(secret.stat().st_mode) == 0o600
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        bare = make_conninfo(dsn, password="")  # what any process on the machine could try
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(bare, connect_timeout=5)
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(make_conninfo(dsn, password="guess"), connect_timeout=5)
        again = require_password(bare, pgdata)  # a restart finds it as it was
        assert conninfo_to_dict(again) == conninfo_to_dict(dsn)
    finally:
        server.cleanup()  # type: ignore[attr-defined]
