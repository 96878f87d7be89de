"""Poison records: what reached a dead-letter queue in a shape nothing can act on."""

from __future__ import annotations

from typing import Any

from cairn.store.db import Connection

INSERT = """
INSERT INTO dead_letters (source, body, reason, receives)
VALUES (%(source)s, %(body)s, %(reason)s, %(receives)s)
RETURNING id
"""
LATEST = "SELECT * FROM dead_letters ORDER BY id DESC LIMIT %(limit)s"


def record(conn: Connection, source: str, body: str, reason: str, receives: int) -> int:
    # PostgreSQL text holds no NUL; the record must be writable whatever arrived.
    params = {
        "source": source,
        "body": body.replace("\x00", "\\u0000"),
        "reason": reason.replace("\x00", ""),
        "receives": receives,
    }
    row = conn.execute(INSERT, params).fetchone()
    assert row is not None
    return int(row["id"])


def latest(conn: Connection, limit: int = 100) -> list[dict[str, Any]]:
    return list(conn.execute(LATEST, {"limit": limit}).fetchall())
