"""Counting SQL statements and round trips on every psycopg connection of the process.

A round trip is a message that asks the server to answer and wait for it: a Sync (the end
of a statement outside a pipeline, or of a pipeline's batch) or a simple Query (COMMIT,
BEGIN). They are counted from libpq's own trace of the protocol (PQtrace), turned on around
each wait of a counted thread, so the count is what crossed the wire, however slow the
client: counting psycopg's waits to read (as this once did) missed a pipeline whose answers
had arrived by the time a starved client looked (1 or 2 counted for 3 beside CPU burners).
Shared by tests (which count one thread) and bench/.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from typing import Any

import psycopg
from psycopg import pq

# What a frontend message line of the trace names (its third field without timestamps).
ANSWERED = {"Sync", "Query"}


class RoundTrips:
    """Counts while installed; `thread` limits the count to one thread (others run on)."""

    def __init__(self, thread: threading.Thread | None = None) -> None:
        self.statements = 0
        self.round_trips = 0
        self.wait_seconds = 0.0  # time spent waiting on the server: the SQL time
        self._thread = thread
        self._lock = threading.Lock()
        self._saved: tuple[Any, Any] | None = None
        self._sinks = threading.local()  # each thread's trace file
        self._files: list[Any] = []

    def _counted(self) -> bool:
        return self._thread is None or threading.current_thread() is self._thread

    def _sink(self) -> int:
        fd: int | None = getattr(self._sinks, "fd", None)
        if fd is None:
            file = tempfile.TemporaryFile()  # noqa: SIM115 (closed at uninstall)
            self._files.append(file)
            fd = self._sinks.fd = file.fileno()
        return fd

    def _traced(self, conn: psycopg.Connection[Any], call: Any) -> Any:
        """`call()` with the connection's protocol traced; the round trips it made counted."""
        fd = self._sink()
        start = os.lseek(fd, 0, os.SEEK_CUR)
        conn.pgconn.trace(fd)
        conn.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            return call()
        finally:
            conn.pgconn.untrace()  # flushes what it traced
            end = os.lseek(fd, 0, os.SEEK_CUR)
            text = os.pread(fd, end - start, start).decode(errors="replace")
            trips = sum(
                1
                for line in text.splitlines()
                if (f := line.split("\t"))[0] == "F" and len(f) > 2 and f[2] in ANSWERED
            )
            with self._lock:
                self.round_trips += trips

    def install(self) -> RoundTrips:
        execute, wait = psycopg.Connection.execute, psycopg.Connection.wait
        self._saved = (execute, wait)
        counter = self

        def counting_execute(conn, query, params=None, **kwargs):  # type: ignore[no-untyped-def]
            if counter._counted():
                with counter._lock:
                    counter.statements += 1
            return execute(conn, query, params, **kwargs)

        def counting_wait(conn, gen, *args, **kwargs):  # type: ignore[no-untyped-def]
            if not counter._counted():
                return wait(conn, gen, *args, **kwargs)
            started = time.perf_counter()
            try:
                return counter._traced(conn, lambda: wait(conn, gen, *args, **kwargs))
            finally:
                with counter._lock:
                    counter.wait_seconds += time.perf_counter() - started

        psycopg.Connection.execute = counting_execute  # type: ignore[method-assign]
        psycopg.Connection.wait = counting_wait  # type: ignore[method-assign]
        return self

    def uninstall(self) -> None:
        if self._saved is not None:
            psycopg.Connection.execute, psycopg.Connection.wait = self._saved  # type: ignore[method-assign]
            self._saved = None
        for file in self._files:
            file.close()
        self._files.clear()

    def __enter__(self) -> RoundTrips:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()
