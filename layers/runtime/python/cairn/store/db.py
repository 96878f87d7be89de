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
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from cairn.errors import UnavailableError

# A row whose key is taken: what a second writer of an idempotent insert (a run id derived
# from what started it) meets when the first won the race. Callers above the store catch
# it by this name.
DuplicateKey = psycopg.errors.UniqueViolation

Connection = psycopg.Connection[dict[str, Any]]

# A connection idle longer than this is pinged before use: Lambda freezes between
# invocations and RDS Proxy or the server may have dropped it meanwhile. Cheaper than a ping
# on every checkout, which would add a round trip to every step.
IDLE_CHECK_SECONDS = 30.0
# A statement is prepared on its third execution on a connection (one-off queries never are).
PREPARE_AFTER = 2
# Waiting for a database that cannot be reached yet (Aurora resuming from a pause takes about
# 15 s, longer after a day paused): a fresh attempt this often once the last one failed,
# rather than the pool's own backoff (1, 2, 4, 8, 16 s apart), and never longer than this
# whatever the caller's deadline.
RETRY_SECONDS, MOST_WAIT_SECONDS = 1.0, 60.0


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
    (tests/integration/test_pipeline_errors.py). Both sides forget every prepared statement
    when psycopg rolls a transaction back (it clears its cache and sends DEALLOCATE ALL):
    an empty transaction is rolled back here for that; inside one, the caller's rollback
    does the same.

    A `DEALLOCATE ALL` sent as a statement, as before, did it only once a connection:
    psycopg counts that statement like any other and looks for DEALLOCATE ALL only in the
    results of statements it has not seen yet, so a second one emptied the server's
    statements behind its back. On a warm function's one connection, two failed pipelines
    (a tenant's NUL byte twice) then failed every later request with a 500
    (`test_statements_prepared_between_two_failed_pipelines_still_run`)."""
    if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
        with conn.transaction():
            raise psycopg.Rollback()


class _WarmFirst(ConnectionPool[Connection]):
    """A pool that hands a thread the connection it gave back last, else the one returned
    last.

    psycopg_pool (3.3) queues its idle connections, oldest first: a stream of one-at-a-time
    requests turns over every connection it ever opened, and with them as many PostgreSQL
    backends, each with its own caches, cold in the CPU's. The most recently used one is
    the warm one (SQLAlchemy's `pool_use_lifo`); the others age and are the first closed
    when the pool shrinks (it closes from the old end). Interleaved A/B through the local
    stack: 7-11 % less CPU a message.

    Most recent alone still let a background thread (an embedding job, the sweeper) hand
    its connection back last, and the next request take it: a connection on which the
    request's statements were never prepared, so PostgreSQL plans each of them again, the
    claim for about 1 ms, seven times before its plan is cached (two unprepared runs, five
    custom plans). A thread's own connection is the one that holds its statements
    prepared. A connection left idle past IDLE_CHECK_SECONDS is pinged before use, as
    before. psycopg_pool has no option for either: this reorders its deque of idle
    connections (newest on the right) under its lock, just before it takes the leftmost."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._given_back = threading.local()  # the connection this thread returned last
        super().__init__(*args, **kwargs)

    def putconn(self, conn: Connection) -> None:
        self._given_back.conn = weakref.ref(conn)
        super().putconn(conn)

    def _get_ready_connection(self, timeout: float | None) -> Connection | None:
        mine = getattr(self._given_back, "conn", None)
        own = mine() if mine is not None else None
        if len(self._pool) > 1:
            if own is not None and own in self._pool:
                self._pool.remove(own)
                self._pool.appendleft(own)
            else:
                self._pool.rotate(1)
        return super()._get_ready_connection(timeout)


class Database:
    def __init__(
        self,
        dsn: str | Callable[[], str],
        *,
        max_size: int = 1,
        connect_timeout: float = 10.0,
        prepare: bool = True,
        idle_check_seconds: float = IDLE_CHECK_SECONDS,
    ) -> None:
        # A callable is asked again for each new connection (a rotated password).
        self.dsn = dsn
        # Server-side prepared statements save the planning of every hot query (the claim
        # alone plans for ~1.3 ms), but pin sessions behind RDS Proxy: off there.
        self._prepare_threshold = PREPARE_AFTER if prepare else None
        self._last_used: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._max_size, self._connect_timeout = max_size, connect_timeout
        self._idle_check = idle_check_seconds
        # How long the caller may wait for a connection (its deadline's time left), or None
        # for connect_timeout: `wait_within`.
        self._patience: Callable[[], float | None] | None = None
        # Connections of the current pool given out now (a pool that times out with all in
        # use is busy, not unreachable).
        self._in_use = 0
        self._pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[Connection]:
        return _WarmFirst(
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
        if time.monotonic() - self._last_used.get(conn, 0.0) > self._idle_check:
            conn.execute("SELECT 1")

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
            self._in_use = 0  # of the new pool; the old one's go back to it, closed
        with contextlib.suppress(Exception):
            old.close(timeout=0)

    def wait_within(self, patience: Callable[[], float | None]) -> None:
        """Wait for a connection as long as `patience()` says the caller can (the time left
        before its deadline, or None), at most MOST_WAIT_SECONDS and at least connect_timeout:
        a request that arrives while the database resumes is served late, not refused."""
        self._patience = patience

    def _wait_seconds(self) -> float:
        """The deadline lengthens the wait, never shortens it: what runs past it (handing
        a step to the queue, answering 202) still needs its connection."""
        left = self._patience() if self._patience is not None else None
        return max(self._connect_timeout, min(left or 0.0, MOST_WAIT_SECONDS))

    def in_use(self) -> int:
        """Connections given out now (none while a search embeds its query, say)."""
        return self._in_use

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A connection in autocommit: each statement is its own transaction."""
        pool, conn = self._checkout()
        with self._lock:
            counted = pool is self._pool
            self._in_use += counted
        try:
            yield conn
        finally:
            with self._lock:
                self._in_use -= counted and pool is self._pool
            # Marked here, not by the pool's `reset` callback: with one, psycopg_pool hands
            # every returned connection to a worker thread, a thread switch per checkout.
            self._last_used[conn] = time.monotonic()
            pool.putconn(conn)  # the pool it came from, even if `reset` replaced it since

    def _checkout(self) -> tuple[ConnectionPool[Connection], Connection]:
        give_up = time.monotonic() + self._wait_seconds()
        while True:
            if self._pool.closed:  # new, or made anew by `reset`
                self.open()
            pool = self._pool
            left = give_up - time.monotonic()
            try:
                return pool, pool.getconn(timeout=max(min(RETRY_SECONDS, left), 0.001))
            except PoolClosed as err:
                # Another caller's `reset` closed it between our reading it and asking it:
                # the next turn takes the new one (under load during a database restart,
                # this was a 500 for tens of requests).
                if time.monotonic() >= give_up:
                    raise UnavailableError(
                        "The database cannot be reached now; try again in a few seconds"
                    ) from err
                continue
            except PoolTimeout as err:
                busy = self._in_use >= self._max_size
                if time.monotonic() < give_up:
                    # An attempt failed meanwhile (the pool counts it): start a fresh one
                    # now instead of after the pool's growing backoff. One still under way
                    # (a connection held while Aurora resumes) is left to finish.
                    if not busy and pool.get_stats().get("connections_errors", 0):
                        self.reset()
                    continue
                if busy:
                    raise UnavailableError(
                        "Every database connection of this server is in use; try again shortly"
                    ) from err
                # None open: the database is paused and resuming, failing over, or gone.
                # The next request starts connecting afresh; this caller is told to come
                # back, not given an unknown error.
                self.reset()
                raise UnavailableError(
                    "The database cannot be reached now (it may be resuming); try again in a "
                    "few seconds"
                ) from err

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self.connection() as conn, conn.transaction():
            yield conn
