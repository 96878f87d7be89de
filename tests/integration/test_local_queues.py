"""The local stack's queues (`adapters/local/queue.py`): SQS's semantics the handlers rely
on, and the embedding jobs kept off the turns' way: published after the reply, on a queue of their
own (FIFO too, so a window's duplicates are dropped, but never in a group a turn waits
on), so a slow or failing embedding provider holds no turn of its agent."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from cairn.adapters.local.lambdas import invoke
from cairn.adapters.local.queue import LocalQueue
from cairn.assembly.build import use_runtime
from cairn.config import Settings
from cairn.domain import Organization, User
from cairn.domain.runs import OutboxCommand
from cairn.local.__main__ import start_workers
from cairn.local.http import make_server
from cairn.run import later
from cairn.run.runtime import Runtime
from cairn.store import tenancy
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM
from tests.waiting import eventually

STOP = threading.Event()  # never set: receive() returns what is deliverable or waits


def take(queue: LocalQueue) -> Any:
    """The next deliverable message, or None if none is (without waiting for one)."""
    stop = threading.Event()
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(queue.receive(stop)))
    reader.start()
    reader.join(0.2)
    if reader.is_alive():
        stop.set()
        with queue._changed:
            queue._changed.notify_all()
        reader.join()
    return got[0] if got else None


def test_a_fifo_group_holds_its_next_message_until_the_first_is_done() -> None:
    q = LocalQueue("t.fifo")
    for body, group in (("a1", "a"), ("a2", "a"), ("b1", "b")):
        q.send(body, group=group, dedup=body)
    first = q.receive(STOP)
    assert first is not None and first.body == "a1"
    second = q.receive(STOP)
    assert second is not None and second.body == "b1"  # a2 waits behind a1
    assert take(q) is None
    q.delete(first.handle)
    third = q.receive(STOP)
    assert third is not None and third.body == "a2"


def test_duplicates_are_dropped_and_a_failed_message_comes_back_first_then_dead_letters() -> None:
    dead = LocalQueue("t-dlq.fifo")
    q = LocalQueue("t.fifo", max_receives=2, dead_letters=dead)
    assert q.send("a1", group="a", dedup="x") and not q.send("again", group="a", dedup="x")
    q.send("a2", group="a", dedup="y")
    m = q.receive(STOP)
    assert m is not None and m.body == "a1"
    q.release(m.handle, 0)  # failed: back at once, still ahead of a2
    again = q.receive(STOP)
    assert again is not None and again.body == "a1" and again.receives == 2
    record = q.record(again)
    assert record["attributes"]["ApproximateReceiveCount"] == "2"
    assert record["attributes"]["MessageGroupId"] == "a"
    q.release(again.handle, 0)  # the last receive failed too: to the dead letters
    lost = dead.receive(STOP)
    assert lost is not None and lost.body == "a1"
    nxt = q.receive(STOP)
    assert nxt is not None and nxt.body == "a2"


def test_a_message_waiting_out_its_retry_holds_its_group_not_the_others() -> None:
    q = LocalQueue("t.fifo")
    q.send("a1", group="a", dedup="1")
    q.send("a2", group="a", dedup="2")
    q.send("b1", group="b", dedup="3")
    m = q.receive(STOP)
    assert m is not None
    q.release(m.handle, 60)
    got = q.receive(STOP)
    assert got is not None and got.body == "b1"
    assert take(q) is None  # a2 stays behind a1's retry


@dataclass
class Stack:
    rt: Runtime
    fake: FakeLLM
    url: str


@pytest.fixture(scope="module")
def stack(pg_dsn: str) -> Iterator[Stack]:
    saved = dict(os.environ)
    with FakeLLM() as fake:
        # One failed embedding try stops an agent's embeddings (the default is ten).
        settings = Settings(
            openai_api_key="sk-test",
            openai_base_url=f"{fake.base_url}/v1",
            llm_max_retries=0,
            sync_budget_seconds=20,
            embed_max_tries=1,
        )
        workers = start_workers(pg_dsn, settings=settings, sweep_every_seconds=3600)
        server = make_server("127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        host, port = server.server_address[:2]
        try:
            yield Stack(workers.runtime, fake, f"http://{host!s}:{port}")
        finally:
            fake.embedding_gate.set()
            server.shutdown()
            server.server_close()
            workers.stop()
            use_runtime(None)
            os.environ.clear()
            os.environ.update(saved)


def client(stack: Stack, db: Database, org: Organization, user: User) -> httpx.Client:
    with db.transaction() as conn:
        _, key = tenancy.create_api_key(conn, org.id, user.id, name="queues")
    return httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def agent_with_embeddings(stack: Stack, http: httpx.Client) -> str:
    made = http.post(
        "/v1/agents/",
        json={
            "llm_config": {
                "model": "gpt-test",
                "model_endpoint_type": "openai",
                "model_endpoint": f"{stack.fake.base_url}/v1",
                "context_window": 128000,
            },
            "embedding_config": {
                "embedding_model": "text-embedding-3-small",
                "embedding_endpoint_type": "openai",
                "embedding_endpoint": f"{stack.fake.base_url}/v1",
                "embedding_dim": 1536,
            },
        },
    )
    assert made.status_code == 200, made.text
    return str(made.json()["id"])


def unembedded(db: Database, agent_id: str) -> int:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM messages WHERE agent_id = %s"
            " AND embedding IS NULL AND search_text <> ''",
            (agent_id,),
        ).fetchone()
    assert row is not None
    return int(row["n"])


def send_async(http: httpx.Client, agent_id: str, text: str) -> str:
    r = http.post(f"/v1/agents/{agent_id}/messages/async", json={"input": text})
    assert r.status_code == 200, r.text
    return str(r.json()["id"])


def test_an_embedding_job_that_hangs_holds_no_turn_of_its_agent(
    stack: Stack, db: Database, org: Organization, user: User
) -> None:
    stack.fake.reset()
    stack.fake.embedding_requests.clear()
    stack.fake.embedding_gate.clear()  # the provider answers no embedding request
    try:
        with client(stack, db, org, user) as http:
            agent = agent_with_embeddings(stack, http)
            stack.fake.reply("first answer")
            first = http.post(f"/v1/agents/{agent}/messages", json={"input": "hello"})
            assert first.status_code == 200, first.text
            # The reply's embedding job has reached the provider and hangs there...
            eventually(lambda: stack.fake.embedding_requests)
            # ...while the agent's next turns, queued behind nothing, run to their end.
            for n in range(2):
                stack.fake.reply(f"answer {n}")
            run_ids = [send_async(http, agent, f"then {n}") for n in range(2)]
            for run_id in run_ids:
                done = eventually(
                    lambda r=run_id: (
                        (got := http.get(f"/v1/runs/{r}").json())["status"]
                        in ("completed", "failed")
                        and got
                    )
                )
                assert done["status"] == "completed", done
            waiting = unembedded(db, agent)
            assert stack.fake.embedding_gate.is_set() is False and waiting > 0
    finally:
        stack.fake.embedding_gate.set()
    eventually(lambda: unembedded(db, agent) < waiting)  # the job ends once answered
    # The later turns' messages, whose jobs the window dropped as duplicates: the sweep's.
    invoke("sweeper", {"source": "test"})
    assert unembedded(db, agent) == 0


def test_an_embedding_provider_that_fails_holds_no_turn_and_stops_with_a_dead_letter(
    stack: Stack, db: Database, org: Organization, user: User
) -> None:
    stack.fake.reset()
    stack.fake.embedding_requests.clear()
    stack.fake.embedding_failures = 1000
    try:
        with client(stack, db, org, user) as http:
            agent = agent_with_embeddings(stack, http)
            for n in range(3):
                stack.fake.reply(f"answer {n}")
                r = http.post(f"/v1/agents/{agent}/messages", json={"input": f"message {n}"})
                assert r.status_code == 200 and r.json()["stop_reason"]["stop_reason"] == "end_turn"
            stack.fake.reply("queued answer")
            run_id = send_async(http, agent, "and one more")
            done = eventually(
                lambda: (
                    (got := http.get(f"/v1/runs/{run_id}").json())["status"]
                    in ("completed", "failed")
                    and got
                )
            )
            assert done["status"] == "completed"

            def dead_letters() -> list[dict[str, Any]]:
                with db.connection() as conn:
                    return conn.execute(
                        "SELECT * FROM dead_letters WHERE body LIKE %s", (f"%{agent}%",)
                    ).fetchall()

            # The job's failure stopped the agent's embeddings, with the reason kept...
            (letter,) = eventually(dead_letters)
            assert letter["source"] == "embeddings" and "embeddings are down" in letter["reason"]
            # ...and no later job, delivery or sweep asks the failing provider again.
            stack.fake.reply("after the stop")
            assert http.post(f"/v1/agents/{agent}/messages", json={"input": "more"}).is_success
            invoke("sweeper", {"source": "test"})
            assert len(stack.fake.embedding_requests) == 1 and len(dead_letters()) == 1
    finally:
        stack.fake.embedding_failures = 0


class Stuck:
    """An embedding queue that cannot be reached: its publish blocks until released."""

    def __init__(self, real: Any) -> None:
        self.real, self.released, self.tried = real, threading.Event(), threading.Event()

    def publish(self, command: OutboxCommand) -> None:
        self.tried.set()
        self.released.wait(60)
        self.real.publish(command)


def test_the_embedding_job_is_published_after_the_reply_not_before(
    stack: Stack, db: Database, org: Organization, user: User
) -> None:
    stack.fake.reset()
    stuck = Stuck(stack.rt.queue.embeddings)
    stack.rt.queue.embeddings = stuck
    try:
        with client(stack, db, org, user) as http:
            agent = agent_with_embeddings(stack, http)
            stack.fake.reply("answered")
            r = http.post(f"/v1/agents/{agent}/messages", json={"input": "hello"})
            assert r.status_code == 200, r.text  # answered while its job's publish hangs
            assert stuck.tried.wait(30) and not stuck.released.is_set()
            assert stuck.real.queue.depth() == 0 and unembedded(db, agent) > 0
    finally:
        stuck.released.set()
        later.settle()
        stack.rt.queue.embeddings = stuck.real
    eventually(lambda: unembedded(db, agent) == 0)
