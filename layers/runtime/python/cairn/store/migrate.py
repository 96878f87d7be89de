"""Migration runner: ordered plain .sql files, each in its own transaction.

Safe to run twice and from several processes at once: a session-level advisory lock makes
runners take turns, and each file is recorded in `schema_migrations` in the transaction that
applies it, so a file is either wholly applied and recorded, or neither.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

# An arbitrary constant shared by every runner ("cairn" in ASCII).
MIGRATION_LOCK_KEY = 0x636169726E

CREATE_MIGRATIONS_TABLE = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     text PRIMARY KEY,
    applied_at  timestamptz NOT NULL DEFAULT now()
)
"""
SELECT_APPLIED = "SELECT version FROM schema_migrations"
RECORD_APPLIED = "INSERT INTO schema_migrations (version) VALUES (%s)"


@dataclass(frozen=True)
class Migration:
    version: str  # the file name without .sql, e.g. "0001_initial"
    sql: str


def available_migrations() -> list[Migration]:
    folder = resources.files("cairn.store") / "migrations"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(version=f.name.removesuffix(".sql"), sql=f.read_text()) for f in files]


def apply_migrations(dsn: str, migrations: list[Migration] | None = None) -> list[str]:
    """Apply every migration not yet recorded; return the versions applied by this call."""
    pending_all = migrations if migrations is not None else available_migrations()
    applied_now: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        # A migration may build an index over a large table: no statement deadline here.
        conn.execute("SET statement_timeout = 0")
        conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
        try:
            conn.execute(CREATE_MIGRATIONS_TABLE)
            done = {row[0] for row in conn.execute(SELECT_APPLIED)}
            for migration in pending_all:
                if migration.version in done:
                    continue
                logger.info("applying migration %s", migration.version)
                with conn.transaction():
                    conn.execute(migration.sql.encode())
                    conn.execute(RECORD_APPLIED, (migration.version,))
                applied_now.append(migration.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))
    return applied_now


APP_ROLE = "cairn_app"


def allow_login(dsn: str, password: str, role: str = APP_ROLE) -> None:
    """Let the application role (made by migration 0009) log in with `password`: the value
    of the stack's secret that RDS Proxy uses for it. Idempotent; run after migrations."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        # A password cannot be a bind parameter of ALTER ROLE: quoted as a literal instead.
        conn.execute(
            sql.SQL("ALTER ROLE {} WITH LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )


# Aurora's role for IAM database authentication: its members log in with IAM tokens only.
IAM_LOGIN_ROLE = "rds_iam"


def allow_iam_login(dsn: str, role: str = APP_ROLE) -> None:
    """Let the application role log in to the cluster itself with IAM tokens (a stack with
    no RDS Proxy): LOGIN, and membership of rds_iam. Idempotent; run after migrations."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} WITH LOGIN").format(sql.Identifier(role)))
        conn.execute(
            sql.SQL("GRANT {} TO {}").format(sql.Identifier(IAM_LOGIN_ROLE), sql.Identifier(role))
        )
