"""Counting SQL statements and round trips on every psycopg connection of the process.

A round trip is a wait for the server's answer: psycopg's protocol generators yield
`Wait.R` then; consecutive reads of one large answer count once, and a pipeline sends many
statements and waits once per sync. Shared by tests (which count one thread) and bench/.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from typing import Any

import psycopg
from psycopg.waiting import Wait


class RoundTrips:
    """Counts while installed; `thread` limits the count to one thread (others run on)."""

    def __init__(self, thread: threading.Thread | None = None) -> None:
        self.statements = 0
        self.round_trips = 0
        self.wait_seconds = 0.0  # time spent waiting on the server: the SQL time
        self._thread = thread
        self._lock = threading.Lock()
        self._saved: tuple[Any, Any] | None = None

    def _counted(self) -> bool:
        return self._thread is None or threading.current_thread() is self._thread

    def install(self) -> RoundTrips:
        execute, wait = psycopg.Connection.execute, psycopg.Connection.wait
        self._saved = (execute, wait)
        counter = self

        def counting_execute(conn, query, params=None, **kwargs):  # type: ignore[no-untyped-def]
            if counter._counted():
                with counter._lock:
                    counter.statements += 1
            return execute(conn, query, params, **kwargs)

        def watched(gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
            previous = None
            try:
                state = gen.send(None)
                while True:
                    if state == Wait.R and previous != Wait.R and counter._counted():
                        with counter._lock:
                            counter.round_trips += 1
                    previous = state
                    ready = yield state
                    state = gen.send(ready)
            except StopIteration as done:
                return done.value

        def counting_wait(conn, gen, *args, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return wait(conn, watched(gen), *args, **kwargs)
            finally:
                if counter._counted():
                    with counter._lock:
                        counter.wait_seconds += time.perf_counter() - started

        psycopg.Connection.execute = counting_execute  # type: ignore[method-assign]
        psycopg.Connection.wait = counting_wait  # type: ignore[method-assign]
        return self

    def uninstall(self) -> None:
        if self._saved is not None:
            psycopg.Connection.execute, psycopg.Connection.wait = self._saved  # type: ignore[method-assign]
            self._saved = None

    def __enter__(self) -> RoundTrips:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        self.uninstall()
