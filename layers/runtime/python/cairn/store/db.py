"""Connections fit for Lambda: reused across warm invocations, renewed when they go stale.

One small pool per process (size 1 in Lambda, a few for the threaded local stack). No session
state survives a transaction: connections run in autocommit with explicit transactions and no
server-side prepared statements, so RDS Proxy can multiplex them without pinning.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from cairn.errors import UnavailableError

Connection = psycopg.Connection[dict]

# A connection idle longer than this is pinged before use: Lambda freezes between
# invocations and RDS Proxy or the server may have dropped it meanwhile. Cheaper than a ping
# on every checkout, which would add a round trip to every step.
IDLE_CHECK_SECONDS = 30.0
# A statement is prepared on its third execution on a connection (one-off queries never are).
PREPARE_AFTER = 2


@contextmanager
def pipeline(conn: Connection) -> Iterator[psycopg.Pipeline]:
    """`conn.pipeline()`, with libpq in blocking mode while it lasts.

    psycopg (up to 3.3.9 at least) stops flushing a pipeline once its last command is
    queued, even when libpq's flush says data is still pending: a statement whose
    parameters outgrow the socket buffer (about a megabyte, a large message) is never sent
    whole, and both sides wait forever (the server in ClientRead, us for its results). In
    blocking mode libpq's flush sends everything, reading what the server sends meanwhile
    so that neither side stalls; the round trips stay the same.
    """
    conn.pgconn.nonblocking = 0
    try:
        with conn.pipeline() as opened:
            yield opened
    except psycopg.Error:
        _forget_prepared(conn)
        raise
    finally:
        if not conn.closed:
            conn.pgconn.nonblocking = 1


def _forget_prepared(conn: Connection) -> None:
    """After a statement failed in a pipeline, the ones queued behind it never ran, but
    psycopg (3.3.9) has already counted the one it was preparing as prepared: every later
    use of it on this connection failed with 'prepared statement "_pg3_N" does not exist'
    (tests/integration/test_pipeline_errors.py). DEALLOCATE ALL makes both sides forget
    every prepared statement (psycopg clears its cache on seeing it); inside a transaction
    the caller's ROLLBACK does the same."""
    if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
        conn.execute("DEALLOCATE ALL")


class Database:
    def __init__(
        self,
        dsn: str | Callable[[], str],
        *,
        max_size: int = 1,
        connect_timeout: float = 10.0,
        prepare: bool = True,
    ) -> None:
        # A callable is asked again for each new connection (a rotated password).
        self.dsn = dsn
        # Server-side prepared statements save the planning of every hot query (the claim
        # alone plans for ~1.3 ms), but pin sessions behind RDS Proxy: off there.
        self._prepare_threshold = PREPARE_AFTER if prepare else None
        self._last_used: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._max_size, self._connect_timeout = max_size, connect_timeout
        self._in_use = (
            0  # connections given out now (a pool that times out with all in use is busy)
        )
        self._pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[Connection]:
        return ConnectionPool(
            self.dsn,
            min_size=1,
            max_size=self._max_size,
            open=False,
            timeout=self._connect_timeout,
            kwargs={
                "autocommit": True,
                "prepare_threshold": self._prepare_threshold,
                "row_factory": dict_row,
            },
            configure=self._configure,
            check=self._check,
            reset=self._mark_used,
            name="cairn",
        )

    def _configure(self, conn: Connection) -> None:
        from pgvector.psycopg import register_vector

        # The extension is created by the first migration; a connection opened before it
        # does not need the type.
        with contextlib.suppress(psycopg.ProgrammingError):
            register_vector(conn)
        self._last_used[conn] = time.monotonic()

    def _check(self, conn: Connection) -> None:
        if time.monotonic() - self._last_used.get(conn, 0.0) > IDLE_CHECK_SECONDS:
            conn.execute("SELECT 1")

    def _mark_used(self, conn: Connection) -> None:
        self._last_used[conn] = time.monotonic()

    def open(self) -> None:
        with self._lock:
            if self._pool.closed:
                # Not waiting for a first connection here: `connection` waits (within its
                # timeout) and says when the database cannot be reached.
                self._pool.open(wait=False)

    def close(self) -> None:
        self._pool.close()

    def reset(self) -> None:
        """Forget every connection (a SnapStart restore: their sockets are gone); the next
        use connects afresh."""
        with self._lock:
            old, self._pool = self._pool, self._new_pool()
        with contextlib.suppress(Exception):
            old.close(timeout=0)

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection in autocommit: each statement is its own transaction."""
        if self._pool.closed:
            self.open()
        try:
            with self._pool.connection() as conn:
                with self._lock:
                    self._in_use += 1
                try:
                    yield conn
                finally:
                    with self._lock:
                        self._in_use -= 1
        except PoolTimeout as err:
            # No connection within the timeout. With none open, the database is paused and
            # resuming, failing over, or gone: the next request starts connecting afresh
            # (the pool's own retries back off to a minute apart, longer than a resume
            # takes). Either way the caller is told to come back, not an unknown error.
            if self._in_use >= self._max_size:
                raise UnavailableError(
                    "Every database connection of this server is in use; try again shortly"
                ) from err
            self.reset()
            raise UnavailableError(
                "The database cannot be reached now (it may be resuming); try again in a few "
                "seconds"
            ) from err

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self.connection() as conn, conn.transaction():
            yield conn
