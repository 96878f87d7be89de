"""A database that cannot be reached yet (Aurora resuming from a pause, a failover): a
request waits for it within its deadline (a sync send left with too little time answers 202
with its run); past that it answers 503 with Retry-After, never 500; once the database is
there the same process serves again, unrestarted."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from cairn.adapters.local.lambdas import invoke
from cairn.assembly.build import build_runtime, use_runtime
from cairn.config import Settings
from cairn.domain import Organization, User
from cairn.errors import UnavailableError
from cairn.store import tenancy
from cairn.store.db import Database
from tests import waiting
from tests.api.conftest import make_stack
from tests.fakes.llm_server import Reply
from tests.integration.test_handlers import event


class LateDoor:
    """A port that refuses connections until `open()`, then forwards them to the database."""

    def __init__(self, target: tuple[str, int] | str) -> None:
        self.target = target  # (host, port), or a Unix socket's path
        with socket.socket() as probe:  # a free port, closed again: connections are refused
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

        self.server: socket.socket | None = None
        self.ends: list[socket.socket] = []

    def open(self) -> None:
        self.server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._serve, args=(self.server,), daemon=True).start()

    def close(self) -> None:
        """Refuse connections again and cut the ones open (a database that paused)."""
        if self.server is not None:
            with contextlib.suppress(OSError):  # wakes the accepting thread (Linux)
                self.server.shutdown(socket.SHUT_RDWR)
            self.server.close()
            self.server = None
        for end in self.ends:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
        self.ends.clear()

    def _serve(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return  # closed
            if isinstance(self.target, str):
                upstream = socket.socket(socket.AF_UNIX)
                upstream.connect(self.target)
            else:
                upstream = socket.create_connection(self.target)
            self.ends += [client, upstream]
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


def test_a_request_whose_database_is_not_back_by_its_deadline_is_a_503_with_retry_after(
    late: tuple[LateDoor, str], db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.adapters.local import lambdas

    monkeypatch.setitem(lambdas.TIMEOUT_MS, "api", 4_000)  # 2 s to its deadline
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


def test_a_request_while_the_database_resumes_waits_for_it_within_its_deadline(
    late: tuple[LateDoor, str], db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="late"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    door, dsn = late
    slow = Database(dsn, connect_timeout=1)  # alone, it would give up after a second
    use_runtime(build_runtime(Settings(openai_api_key="sk-test"), db=slow))
    request = event("api/agents-list.json")
    request["headers"]["authorization"] = f"Bearer {key}"
    opening = threading.Timer(3, door.open)
    try:
        started = time.monotonic()
        opening.start()
        answer = invoke("api", request)  # the api function's deadline: 29 s less 2
        assert answer["statusCode"] == 200, answer
        assert time.monotonic() - started >= 3  # it waited for the door, not failed
    finally:
        opening.cancel()
        use_runtime(None)
        slow.close()


def test_a_sync_send_that_waited_for_the_database_answers_202_when_its_turn_does_not_fit(
    late: tuple[LateDoor, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.adapters.local import lambdas
    from tests.api.conftest import make_stack
    from tests.api.test_http_contract import LLM, _ended, http

    door, dsn = late
    door.open()
    slow = Database(dsn, connect_timeout=1)
    try:
        with make_stack(slow) as stack, http(stack) as client:
            agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
            # The database pauses (its connections go) and this function's environment is
            # new. The function serving the request (the local bridge's `stream`) has 11 s,
            # 6 s to its deadline, as API Gateway's 30 s leave the api function 27.
            door.close()
            slow.reset()
            monkeypatch.setitem(lambdas.TIMEOUT_MS, "stream", 11_000)
            stack.fake.reply("too late", delay=6)  # 3 s resuming + 6 s: past the deadline
            stack.fake.reply("from the worker", delay=2)  # still going when it answers
            opening = threading.Timer(3, door.open)
            opening.start()
            started = time.monotonic()
            sent = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
            took = time.monotonic() - started
            opening.cancel()
            assert sent.status_code == 202, (took, sent.text)
            assert 3 <= took < 11  # waited for the database, answered within the function
            state = _ended(client, sent.json()["id"], timeout=30)
            assert state["status"] == "completed", state
            replies = client.get(f"/v1/runs/{state['id']}/messages").json()
            said = [m.get("content") for m in replies if m["message_type"] == "assistant_message"]
            assert said == ["from the worker"]
    finally:
        slow.close()


def test_a_connection_is_given_back_in_the_callers_own_thread(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a `reset` callback psycopg_pool hands each returned connection to a worker
    thread: a thread switch for every checkout, which cost about 1 ms of CPU a message
    (bench/versus_letta.py). The last use is marked by `connection` itself."""
    tasks: list[str] = []
    run_task = ConnectionPool.run_task

    def counted(pool: ConnectionPool[Any], task: Any) -> None:
        tasks.append(type(task).__name__)
        run_task(pool, task)

    monkeypatch.setattr(ConnectionPool, "run_task", counted)
    db = Database(pg_dsn, max_size=2)
    try:
        for _ in range(3):
            with db.connection() as conn:
                conn.execute("SELECT 1")
        assert "ReturnConnection" not in tasks, tasks
    finally:
        db.close()


def test_the_connection_given_back_last_is_the_next_given_out(pg_dsn: str) -> None:
    """The warm connection first (store/db.py, _WarmFirst): psycopg_pool's own order,
    oldest first, would give out `first` here."""
    db = Database(pg_dsn, max_size=2)
    try:
        with db.connection() as first, db.connection() as second:
            last, other = first.info.backend_pid, second.info.backend_pid
        # `first` went back last: the outer block ends after the inner one.
        for _ in range(3):
            with db.connection() as conn:
                assert conn.info.backend_pid == last
        with db.connection() as a, db.connection() as b:  # and the other is still there
            assert {a.info.backend_pid, b.info.backend_pid} == {last, other}
    finally:
        db.close()


def test_a_thread_gets_back_the_connection_it_gave_back_last(pg_dsn: str) -> None:
    """A request's statements are prepared on the connection it used before: another
    thread's connection, given back after it (a background job's), is not handed to it
    (store/db.py, _WarmFirst), though it is the most recently returned."""
    db = Database(pg_dsn, max_size=2)
    try:
        with db.connection() as conn:
            mine = conn.info.backend_pid
        others: list[int] = []

        def background() -> None:
            with contextlib.ExitStack() as one, contextlib.ExitStack() as two:
                a = one.enter_context(db.connection())
                b = two.enter_context(db.connection())
                others.append(
                    b.info.backend_pid if a.info.backend_pid == mine else a.info.backend_pid
                )
                # this thread's other connection goes back last of all
                (one if a.info.backend_pid == mine else two).close()

        worker = threading.Thread(target=background)
        worker.start()
        worker.join(timeout=30)
        assert others and others[0] != mine
        for _ in range(3):
            with db.connection() as conn:
                assert conn.info.backend_pid == mine
    finally:
        db.close()


def test_a_session_the_server_ends_when_idle_is_replaced_unseen(pg_dsn: str) -> None:
    """A small stack's sessions end after a minute idle (so that Aurora may pause): the next
    use finds its connection gone, pings it (idle past idle_check) and gets a new one."""
    idle = make_conninfo(pg_dsn, options="-c idle_session_timeout=500")
    db = Database(idle, idle_check_seconds=0.2)
    try:
        with db.connection() as conn:
            first = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert first is not None
        with psycopg.connect(pg_dsn, autocommit=True) as watcher:
            deadline = time.monotonic() + 30
            while watcher.execute(
                "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (first["pid"],)
            ).fetchone():
                assert time.monotonic() < deadline, "the idle session was never ended"
                time.sleep(0.1)
        with db.connection() as conn:
            again = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert again is not None and again["pid"] != first["pid"]
    finally:
        db.close()


def test_a_pool_replaced_under_a_caller_is_taken_again_not_a_500(pg_dsn: str) -> None:
    """One caller's `reset` (its connection attempt failed while the database restarted)
    closes the pool others are waiting on: they take the new pool. Under load during a
    restart this was `PoolClosed` ("the pool 'cairn' is closed"), a 500, for tens of
    requests."""
    db = Database(pg_dsn, max_size=1, connect_timeout=5)
    failures: list[BaseException] = []
    served = [0]
    stop = threading.Event()

    def use() -> None:
        while not stop.is_set():
            try:
                with db.connection() as conn:
                    conn.execute("SELECT pg_sleep(0.002)")  # the others wait in the pool
                served[0] += 1
            except BaseException as err:  # any escape is the failure
                failures.append(err)

    callers = [threading.Thread(target=use) for _ in range(4)]
    for t in callers:
        t.start()
    try:
        for _ in range(100):
            db.reset()
            time.sleep(0.005)
    finally:
        stop.set()
        for t in callers:
            t.join(10)
        db.close()
    assert failures == [] and served[0] > 0, failures[:3]


def test_a_connection_the_database_drops_under_a_request_is_a_503_then_served(
    late: tuple[LateDoor, str], db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database restarted (or Aurora failed over) between two requests: the connection
    the pool kept is dead, and the request that meets it is told to come back (503 with
    Retry-After; it was a 500 and a traceback), and the next is served on a new one."""
    with db.transaction() as conn:
        org = tenancy.create_organization(conn, Organization(name="dropped"))
        user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="t")
    door, dsn = late
    door.open()
    dropped = Database(dsn, connect_timeout=5)
    use_runtime(build_runtime(Settings(openai_api_key="sk-test"), db=dropped))
    monkeypatch.setenv("CAIRN_API_KEY", key)
    request = event("api/agents-list.json")
    request["headers"]["authorization"] = f"Bearer {key}"
    try:
        assert invoke("api", request)["statusCode"] == 200  # a connection is kept
        door.close()  # the database goes, cutting it, and comes back at once
        door.open()
        answer = invoke("api", request)
        assert answer["statusCode"] == 503, answer
        assert answer["headers"]["Retry-After"] == "5"
        assert "connection was lost" in json.loads(answer["body"])["detail"]
        assert invoke("api", request)["statusCode"] == 200
    finally:
        use_runtime(None)
        dropped.close()


def test_a_sync_send_whose_database_goes_mid_step_ends_its_run_once_it_is_back(
    late: tuple[LateDoor, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database goes while the model answers a sync send: the caller is told to come
    back (503), and the step, which could not be written back to the outbox (the database
    is what failed), goes on the queue, whose worker ends the run once the database is
    back. It stayed `created` until the stall sweep (30 minutes) before."""
    from cairn.adapters.local import lambdas

    monkeypatch.setitem(lambdas.TIMEOUT_MS, "api", 6_000)
    door, dsn = late
    door.open()
    going = Database(dsn, max_size=4, connect_timeout=1)
    stacked = make_stack(going)
    with (
        stacked as stack,
        httpx.Client(
            base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=60
        ) as client,
    ):
        llm = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
        agent = client.post("/v1/agents/", json={"llm_config": llm}).json()
        gate = threading.Event()
        stack.fake.when(lambda _: True, Reply(text="Noted, Ada.", gate=gate))
        answers: list[httpx.Response] = []
        sending = threading.Thread(
            target=lambda: answers.append(
                client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "hi"})
            )
        )
        sending.start()
        waiting.eventually(lambda: stack.fake.requests, 30)  # the model is asked
        door.close()  # the database goes while it answers
        gate.set()
        sending.join(60)
        (answer,) = answers
        assert answer.status_code == 503, answer.text
        door.open()

        def ended() -> dict[str, Any] | None:
            found = client.get("/v1/runs/", params={"agent_id": agent["id"]})
            if found.status_code != 200:
                return None
            done = [r for r in found.json() if r["status"] == "completed"]
            return done[0] if done else None

        run = waiting.eventually(ended, 60)
        said = client.get(f"/v1/runs/{run['id']}/messages").json()
        assert [m["message_type"] for m in said].count("assistant_message") == 1
        assert len(client.get("/v1/runs/", params={"agent_id": agent["id"]}).json()) == 1
