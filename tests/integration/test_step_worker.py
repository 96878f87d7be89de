"""The SQS step worker on moto: FIFO delivery, redelivery, the DLQ, and the outbox sweeper."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cairn import faults
from cairn.adapters.aws.sqs import SqsStepQueue
from cairn.adapters.local.lambdas import invoke
from cairn.adapters.local.sqs import Poller, create_step_queues, to_event
from cairn.assembly.build import build_runtime, use_runtime
from cairn.config import Settings
from cairn.domain import Organization
from cairn.domain.runs import OutboxCommand, RunOptions
from cairn.run import later
from cairn.run.driving import sending
from cairn.run.driving import worker as step_worker
from cairn.run.driving.watchdog import MAX_LOST_SENDS, MAX_REDRIVES
from cairn.run.runtime import Runtime
from cairn.store import agents, dead_letters, messages, runs
from cairn.store import db as db_module
from cairn.store import steps as step_rows
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, Reply, call
from tests.fakes.round_trips import RoundTrips
from tests.integration.engine_harness import make_agent, user
from tests.waiting import eventually


@dataclass
class Worker:
    rt: Runtime
    sqs: Any
    queue_url: str
    dlq_url: str
    fake: FakeLLM

    @contextmanager
    def workers(self, count: int = 4) -> Iterator[None]:
        """`count` step workers polling the queue, as the local stack runs them; stopped
        when the block ends."""
        pollers = [
            Poller(self.sqs, self.queue_url, "step", batch_size=1, environment=n)
            for n in range(count)
        ]
        for poller in pollers:
            poller.start()
        try:
            yield
        finally:
            for poller in pollers:
                poller.stopping.set()
            for poller in pollers:
                poller.join(timeout=10)

    def run(self, org_id: str, run_id: str) -> Any:
        with self.rt.db.connection() as conn:
            return runs.get_run(conn, org_id, run_id)

    def drain(self, run_id: str, org_id: str, *, timeout: float = 30) -> Any:
        poller = Poller(self.sqs, self.queue_url, "step")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            poller.poll_once(wait_seconds=0)
            with self.rt.db.connection() as conn:
                run = runs.get_run(conn, org_id, run_id)
            if run is not None and run.status in ("completed", "failed", "cancelled"):
                return run
            time.sleep(0.05)
        raise AssertionError("run did not finish")


class DownQueue:
    """The queue being unreachable right after a commit: publishing raises while it has
    `failures` left; otherwise (and for all else a queue does) the real queue."""

    def __init__(self, real: SqsStepQueue, failures: int) -> None:
        self.real, self.failures = real, failures
        self.sent: list[OutboxCommand] = []  # every command handed over, as it was

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)  # its batches and redeliveries, as they are

    def publish(self, command: OutboxCommand) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("queue unreachable")
        self.sent.append(command)
        self.real.publish(command)


@pytest.fixture
def worker(db: Database) -> Iterator[Worker]:
    with mock_aws(), FakeLLM() as fake:
        sqs = boto3.client("sqs", region_name="us-east-1")
        url, dlq = create_step_queues(sqs, name="test-steps")
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "1"})
        settings = Settings(
            openai_api_key="k",
            openai_base_url=f"{fake.base_url}/v1",
            llm_max_retries=0,
            step_queue_url=url,
            sync_budget_seconds=1,
        )
        # The queue as a test may make it fail (DownQueue, never failing unless told).
        queue = DownQueue(SqsStepQueue(url, sqs), failures=0)
        rt = build_runtime(settings, db=db, queue=queue)  # type: ignore[arg-type]
        use_runtime(rt)
        try:
            yield Worker(rt, sqs, url, dlq, fake)
        finally:
            use_runtime(None)


def test_async_send_runs_every_step_through_the_fifo_queue(
    worker: Worker, org: Organization
) -> None:
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("", call("conversation_search", query="tea"))
    worker.fake.reply("Found nothing.")
    run = sending.send(
        worker.rt,
        org.id,
        agent.id,
        [user(agent, "search tea")],
        RunOptions(max_steps=10),
        wait=False,
    ).run
    done = worker.drain(run.id, org.id)
    assert done.status == "completed" and done.stop_reason == "end_turn"
    with worker.rt.db.connection() as conn:
        steps = step_rows.list_steps(conn, org.id, run.id)
    assert [s.step_index for s in steps] == [0, 1] and len(worker.fake.requests) == 2


def test_a_sync_turn_of_one_step_costs_three_round_trips(
    worker: Worker, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Start the run and claim its step (one pipeline), the checkpoint (two: its statements,
    then COMMIT). No read before, none for the reply, no outbox row for the embedding job."""
    # A pooled connection idle for 30 s is pinged before use: not part of a turn's cost.
    monkeypatch.setattr(db_module, "IDLE_CHECK_SECONDS", float("inf"))
    # The turn is answered within the request however slow the machine (the fixture's 1 s
    # budget is for the tests of a turn handed to the queue).
    monkeypatch.setattr(worker.rt.settings, "sync_budget_seconds", 25.0)
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("Hello Ada.")
    sending.send(
        worker.rt, org.id, agent.id, [user(agent, "warm up")], RunOptions(max_steps=10), wait=True
    )
    later.settle()  # the warm-up's work after its reply is done before the count starts
    worker.fake.reply("Hello again.")
    with RoundTrips(threading.current_thread()) as counted:
        sent = sending.send(
            worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=True
        )
    assert sent.run.stop_reason == "end_turn"
    assert sent.messages is not None and [m.role for m in sent.messages] == ["user", "assistant"]
    assert counted.round_trips == 3


def test_a_redelivered_message_is_harmless(worker: Worker, org: Organization) -> None:
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("hello")
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    ).run
    got = worker.sqs.receive_message(QueueUrl=worker.queue_url, AttributeNames=["All"])["Messages"]
    event = to_event(got, "arn:aws:sqs:us-east-1:123456789012:test-steps.fifo")
    assert invoke("step", event) == {"batchItemFailures": []}
    assert invoke("step", event) == {"batchItemFailures": []}  # the same message again
    with worker.rt.db.connection() as conn:
        assert len(step_rows.list_steps(conn, org.id, run.id)) == 1
        assert runs.get_run(conn, org.id, run.id).status == "completed"  # type: ignore[union-attr]
    assert len(worker.fake.requests) == 1


def test_a_step_that_keeps_failing_lands_in_the_dlq_and_fails_its_run(
    worker: Worker, org: Organization
) -> None:
    agent = make_agent(worker.rt.db, org)

    def blip() -> None:  # not the provider: something the queue's redelivery is for
        raise RuntimeError("the database went away")

    worker.fake.reply("never reached")
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    ).run
    main = Poller(worker.sqs, worker.queue_url, "step")
    dead = Poller(worker.sqs, worker.dlq_url, "step", attribute="dead_letter_handler")
    deadline = time.monotonic() + 30
    failed = None
    while time.monotonic() < deadline and failed is None:
        with faults.run_at("before_llm", blip):
            main.poll_once(wait_seconds=0)
        dead.poll_once(wait_seconds=0)
        with worker.rt.db.connection() as conn:
            current = runs.get_run(conn, org.id, run.id)
        failed = current if current and current.status == "failed" else None
        time.sleep(0.2)
    assert failed is not None, "the dead-lettered step must fail its run"
    assert failed.stop_reason == "error" and "failed on each of" in failed.error["message"]  # type: ignore[index]
    with worker.rt.db.connection() as conn:  # its input is kept with it, outside the context
        kept = messages.list_for_agent(conn, org.id, agent.id, run_id=run.id)
    assert [m.text for m in kept] == ["hi"] and kept[0].id not in state_ids(
        worker, org.id, agent.id
    )
    # the agent is free again
    worker.fake.clear()
    worker.fake.reply("back")
    again = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    ).run
    assert worker.drain(again.id, org.id).stop_reason == "end_turn"


def test_a_sync_send_runs_its_turn_here_and_does_not_poll_while_it_waits(
    worker: Worker, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A three-step turn sent in sync: every step runs in the caller (none is queued), and
    the statements it costs do not grow with the time the model takes (no polling)."""
    monkeypatch.setattr(worker.rt.settings, "sync_budget_seconds", 25.0)

    def turn(delay: float) -> tuple[int, float, Any]:
        agent = make_agent(worker.rt.db, org)
        worker.fake.clear()
        worker.fake.reply("", call("conversation_search", query="tea"), delay=delay)
        worker.fake.reply("", call("core_memory_append", label="human", content="tea"), delay=delay)
        worker.fake.reply("Noted.", delay=delay)
        counter = RoundTrips(thread=threading.current_thread()).install()
        started = time.monotonic()
        try:
            sent = sending.send(
                worker.rt,
                org.id,
                agent.id,
                [user(agent, "tea?")],
                RunOptions(max_steps=10),
                wait=True,
            )
        finally:
            counter.uninstall()
        return counter.statements, time.monotonic() - started, sent

    quick, _, sent = turn(0.0)
    slow, took, slow_sent = turn(0.7)
    assert took >= 3 * 0.7  # it did wait for the model, three times
    assert slow == quick  # ...and no statement more for it
    for done in (sent, slow_sent):
        assert done.run.status == "completed" and done.messages is not None
        assert [m.role for m in done.messages][-1] == "assistant"
    # No step was queued: every one ran in the caller (embedding jobs may be).
    got = worker.sqs.receive_message(QueueUrl=worker.queue_url, MaxNumberOfMessages=10)
    bodies = [json.loads(m["Body"]) for m in got.get("Messages", [])]
    assert not [b for b in bodies if b.get("run_id") in (sent.run.id, slow_sent.run.id)]


def test_a_busy_agents_messages_are_embedded_by_one_job_per_window(
    worker: Worker, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three turns in a row: one embedding job is sent (the others would be the same
    window's duplicates: the process builds none of them), it alone reaches the queue, and
    it embeds every message still without a vector at once."""
    from cairn.run.driving import follow_ons

    monkeypatch.setattr(follow_ons, "EMBED_WINDOW_SECONDS", 3600)
    monkeypatch.setattr(worker.rt.settings, "sync_budget_seconds", 25.0)
    agent = make_agent(worker.rt.db, org)
    for n in range(3):
        worker.fake.reply(f"answer {n}")
        sending.send(
            worker.rt,
            org.id,
            agent.id,
            [user(agent, f"message {n}")],
            RunOptions(max_steps=10),
            wait=True,
        )
    later.settle()  # the jobs are published after the replies, not before
    got = worker.sqs.receive_message(
        QueueUrl=worker.queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
    ).get("Messages", [])
    jobs = [m for m in got if json.loads(m["Body"]).get("kind") == "embed"]
    assert len(jobs) == 1
    queue = worker.rt.queue.embeddings  # type: ignore[attr-defined]
    assert len([c for c in queue.sent if c.kind == "embed"]) == 1
    assert invoke("step", to_event(jobs, "arn:aws:sqs:us-east-1:123456789012:test-steps.fifo"))
    with worker.rt.db.connection() as conn:
        missing = conn.execute(
            "SELECT count(*) AS n FROM messages WHERE agent_id = %s AND embedding IS NULL"
            " AND search_text <> ''",
            (agent.id,),
        ).fetchone()
    assert missing is not None and missing["n"] == 0


def test_an_agent_can_turn_message_embeddings_off(
    worker: Worker, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`metadata.cairn_message_embeddings: false`: no embedding job, the backfill passes it
    by, and recall search says it searched by keywords only."""

    from cairn.jobs.embedding_jobs import backfill
    from cairn.run.backends import search

    monkeypatch.setattr(worker.rt.settings, "sync_budget_seconds", 25.0)
    off = make_agent(worker.rt.db, org, metadata={"cairn_message_embeddings": False})
    on = make_agent(worker.rt.db, org)
    for agent in (off, on):
        worker.fake.reply("hello there")
        sending.send(
            worker.rt, org.id, agent.id, [user(agent, "hello")], RunOptions(max_steps=10), wait=True
        )
    later.settle()
    got = worker.sqs.receive_message(QueueUrl=worker.queue_url, MaxNumberOfMessages=10)
    jobs = [json.loads(m["Body"]) for m in got.get("Messages", [])]
    assert {j["agent_id"] for j in jobs if j.get("kind") == "embed"} == {on.id}
    backfill(worker.rt.engine)

    UNEMBEDDED = """SELECT count(*) AS n FROM messages
                    WHERE agent_id = %s AND embedding IS NULL AND search_text <> ''"""

    def unembedded(agent_id: str) -> int:
        with worker.rt.db.connection() as conn:
            row = conn.execute(UNEMBEDDED, (agent_id,)).fetchone()
        assert row is not None
        return int(row["n"])

    assert unembedded(on.id) == 0 and unembedded(off.id) == 2
    embedder = worker.rt.engine.embedder_for(off.embedding_config)
    found = search.AgentSearch(worker.rt.db, off, None, embedder).conversation_search(
        "hello", roles=None, limit=5, start_date=None, end_date=None
    )
    assert found["search_mode"] == "fts" and found["results"]
    assert {r["relevance"]["search_mode"] for r in found["results"]} == {"fts"}


def test_a_sync_send_waits_no_longer_than_its_invocation_has_left(
    worker: Worker, org: Organization, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget is 25 s, but the api invocation around it has 1.5 s left: the model call
    and the wait both stop in time, and the step goes on in a worker."""
    from cairn.llm import deadline

    monkeypatch.setattr(worker.rt.settings, "sync_budget_seconds", 25.0)
    agent = make_agent(worker.rt.db, org)
    worker.fake.when(lambda _: True, lambda _: Reply(text="late", delay=4.0))
    started = time.monotonic()
    with deadline.within(1.5):
        sent = sending.send(
            worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=True
        )
    assert time.monotonic() - started < 3.0
    assert sent.run.status not in ("completed", "failed")
    assert worker.drain(sent.run.id, org.id).status == "completed"


def test_a_failed_step_comes_back_after_a_short_backoff_not_the_visibility_timeout(
    worker: Worker, org: Organization
) -> None:
    """The queue's visibility is six times the step's timeout (for a worker that dies without
    answering); a step that fails and says so is back in seconds."""
    worker.sqs.set_queue_attributes(
        QueueUrl=worker.queue_url, Attributes={"VisibilityTimeout": "600"}
    )
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("after the retry")
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    ).run
    got = worker.sqs.receive_message(QueueUrl=worker.queue_url, AttributeNames=["All"])["Messages"]

    def blip() -> None:
        raise RuntimeError("the database went away")

    with faults.run_at("before_llm", blip):
        result = invoke("step", to_event(got, "arn:aws:sqs:us-east-1:123456789012:test-steps.fifo"))
    assert result == {"batchItemFailures": [{"itemIdentifier": got[0]["MessageId"]}]}
    failed_at = time.monotonic()
    back = []
    while not back and time.monotonic() - failed_at < 20:
        back = worker.sqs.receive_message(
            QueueUrl=worker.queue_url, WaitTimeSeconds=1, AttributeNames=["All"]
        ).get("Messages", [])
    waited = time.monotonic() - failed_at
    assert back and 3 < waited < 10, waited  # the first backoff is 5 s
    assert invoke("step", to_event(back, "arn:aws:sqs:us-east-1:123456789012:test-steps.fifo"))
    with worker.rt.db.connection() as conn:
        assert runs.get_run(conn, org.id, run.id).status == "completed"  # type: ignore[union-attr]


def test_unpublished_continuation_is_swept_and_the_run_completes(
    worker: Worker, org: Organization
) -> None:
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("", call("conversation_search", query="tea"))
    worker.fake.reply("done")
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "go")], RunOptions(max_steps=10), wait=False
    ).run
    got = worker.sqs.receive_message(QueueUrl=worker.queue_url, AttributeNames=["All"])["Messages"]
    down = worker.rt.queue.steps
    assert isinstance(down, DownQueue)  # handed to the runtime at construction
    down.failures = 1
    invoke("step", to_event(got, "arn:aws:sqs:us-east-1:123456789012:test-steps.fifo"))
    # step 0 committed in a worker, its continuation could not be published
    with worker.rt.db.connection() as conn:
        assert runs.get_run(conn, org.id, run.id).status == "running"  # type: ignore[union-attr]
    assert invoke("sweeper", {"source": "aws.events"})["republished"] == 0  # too fresh yet
    with worker.rt.db.connection() as conn:
        conn.execute("UPDATE outbox SET created_at = created_at - interval '1 minute'")
    assert invoke("sweeper", {"source": "aws.events"})["republished"] == 1
    done = worker.drain(run.id, org.id)
    assert done.stop_reason == "end_turn"
    with worker.rt.db.connection() as conn:
        assert [s.step_index for s in step_rows.list_steps(conn, org.id, run.id)] == [0, 1]
    assert len(worker.fake.requests) == 2
    # a week and a day later the sweeper deletes the run's sent rows
    with worker.rt.db.connection() as conn:
        conn.execute(
            "UPDATE outbox SET sent_at = sent_at - interval '8 days' WHERE run_id = %s", (run.id,)
        )
        sent = conn.execute("SELECT count(*) AS n FROM outbox WHERE run_id = %s", (run.id,))
        assert sent.fetchone()["n"] == 2  # type: ignore[index]
    assert invoke("sweeper", {"source": "aws.events"})["pruned"] == 2


def state_ids(worker: Worker, org_id: str, agent_id: str) -> list[str]:
    """The agent's context window."""
    with worker.rt.db.connection() as conn:
        found = agents.get(conn, org_id, agent_id)
    return found.message_ids if found else []


def _lose_queued(worker: Worker) -> int:
    """Whatever the step queue holds is gone (a crashed local stack's in-memory queue)."""
    lost = 0
    while got := worker.sqs.receive_message(
        QueueUrl=worker.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0
    ).get("Messages"):
        for m in got:
            worker.sqs.delete_message(QueueUrl=worker.queue_url, ReceiptHandle=m["ReceiptHandle"])
        lost += len(got)
    return lost


def _an_hour_passes(worker: Worker) -> None:
    with worker.rt.db.connection() as conn:
        conn.execute("UPDATE runs SET updated_at = updated_at - interval '1 hour'")
        conn.execute("UPDATE outbox SET sent_at = sent_at - interval '1 hour'")


def test_a_step_whose_message_was_lost_is_redriven_by_the_watchdog(
    worker: Worker, org: Organization
) -> None:
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("back again")
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    )
    assert _lose_queued(worker) == 1
    swept = invoke("sweeper", {"source": "aws.events"})
    assert swept["watchdog"] == {"redriven": 0, "failed": 0}  # not stalled yet: 30 min
    _an_hour_passes(worker)
    assert invoke("sweeper", {"source": "aws.events"})["watchdog"] == {"redriven": 1, "failed": 0}
    assert worker.drain(run.run.id, org.id).stop_reason == "end_turn"
    assert len(worker.fake.requests) == 1
    _an_hour_passes(worker)  # a finished run is never picked again
    assert invoke("sweeper", {"source": "aws.events"})["watchdog"] == {"redriven": 0, "failed": 0}


def _stalled_sweeps(
    worker: Worker, rounds: int, before_each: Any = lambda: None
) -> list[dict[str, int]]:
    """What the watchdog did in each of `rounds` sweeps, each after the step's message was
    lost (and `before_each` ran) and an hour passed."""
    outcomes = []
    for _ in range(rounds):
        before_each()
        _lose_queued(worker)
        _an_hour_passes(worker)
        outcomes.append(invoke("sweeper", {"source": "aws.events"})["watchdog"])
    return outcomes


def test_a_run_that_never_progresses_fails_with_the_reason_and_frees_its_agent(
    worker: Worker, org: Organization
) -> None:
    agent = make_agent(worker.rt.db, org)
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    )
    # The first send and every re-drive, each lost.
    assert _stalled_sweeps(worker, MAX_LOST_SENDS + 1) == [
        {"redriven": 1, "failed": 0}
    ] * MAX_LOST_SENDS + [{"redriven": 0, "failed": 1}]
    with worker.rt.db.connection() as conn:
        failed = runs.get_run(conn, org.id, run.run.id)
    assert failed is not None and failed.status == "failed" and failed.stop_reason == "error"
    assert failed.error and "made no progress" in failed.error["message"]
    assert failed.error["type"] == "stalled"
    worker.fake.reply("free")
    again = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    )
    assert worker.drain(again.run.id, org.id).stop_reason == "end_turn"


def test_dead_letters_of_any_shape_are_recorded_and_removed(
    worker: Worker, org: Organization
) -> None:
    agent = make_agent(worker.rt.db, org)
    bodies = [
        "not json at all",
        '{"organization_id": 5, "run_id": [], "step_index": -1}',
        json.dumps({"kind": "embed", "organization_id": org.id, "agent_id": agent.id}),
        json.dumps({"organization_id": org.id, "run_id": "run-missing", "step_index": 0}),
    ]
    for i, body in enumerate(bodies):
        worker.sqs.send_message(
            QueueUrl=worker.dlq_url,
            MessageBody=body,
            MessageGroupId="g",
            MessageDeduplicationId=str(i),
        )
    dead = Poller(worker.sqs, worker.dlq_url, "step", attribute="dead_letter_handler")
    assert dead.poll_once(wait_seconds=0) == 4
    time.sleep(1.2)  # past the visibility timeout: anything not deleted would be back
    assert dead.poll_once(wait_seconds=0) == 0
    with worker.rt.db.connection() as conn:
        kept = {r["body"]: r["reason"] for r in dead_letters.latest(conn)}
    assert set(bodies) <= set(kept)  # the database is shared: other tests keep theirs too
    assert "not a step or embedding command" in kept[bodies[0]]
    assert "organization_id" in kept[bodies[1]] and "step_index" in kept[bodies[1]]
    assert "embedding job" in kept[bodies[2]] and "no run run-missing" in kept[bodies[3]]


def test_a_dead_letter_of_a_run_that_already_ended_changes_nothing(
    worker: Worker, org: Organization
) -> None:
    """A step that reached the DLQ after a later delivery (or a re-drive) finished its run:
    the run keeps its end, and nothing is woken or answered a second time."""
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("done")
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    ).run
    assert worker.drain(run.id, org.id).status == "completed"
    body = json.dumps({"organization_id": org.id, "run_id": run.id, "step_index": 0})

    def queued() -> str:
        return worker.sqs.get_queue_attributes(  # type: ignore[no-any-return]
            QueueUrl=worker.queue_url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]["ApproximateNumberOfMessages"]

    before = queued()
    assert step_worker.dead_letter(worker.rt, body, 3) == "already completed"
    assert queued() == before
    with worker.rt.db.connection() as conn:
        after = runs.get_run(conn, org.id, run.id)
    assert after is not None and after.status == "completed" and after.error is None


def test_a_malformed_step_message_is_kept_once_not_redelivered(
    worker: Worker, org: Organization
) -> None:
    worker.sqs.send_message(
        QueueUrl=worker.queue_url,
        MessageBody='{"run_id": "x"}',
        MessageGroupId="g",
        MessageDeduplicationId="bad",
    )
    main = Poller(worker.sqs, worker.queue_url, "step")
    assert main.poll_once(wait_seconds=0) == 1
    time.sleep(1.2)
    assert main.poll_once(wait_seconds=0) == 0  # acknowledged, not left to three deliveries
    with worker.rt.db.connection() as conn:
        kept = [r for r in dead_letters.latest(conn) if r["body"] == '{"run_id": "x"}']
    assert [r["source"] for r in kept] == ["step-queue"] and "organization_id" in kept[0]["reason"]


def test_sweeper_phases_fail_on_their_own_and_name_the_agent(
    worker: Worker, org: Organization
) -> None:
    broken = make_agent(worker.rt.db, org)
    with worker.rt.db.connection() as conn:
        conn.execute(
            "UPDATE agents SET embedding_config = %s WHERE id = %s",
            (
                json.dumps(
                    {
                        "embedding_endpoint_type": "openai",
                        "embedding_model": "m",
                        "embedding_dim": 8,
                        "embedding_endpoint": "http://127.0.0.1:9/v1",
                    }
                ),
                broken.id,
            ),
        )
    worker.fake.reply("hello")
    run = sending.send(
        worker.rt, org.id, broken.id, [user(broken, "hi")], RunOptions(max_steps=10), wait=True
    )
    assert run.run.status == "completed"
    _lose_queued(worker)  # the embedding job: left to the backfill
    with worker.rt.db.connection() as conn:  # and one continuation left unsent by a crash
        conn.execute(
            "UPDATE outbox SET sent_at = NULL, created_at = now() - interval '1 hour'"
            " WHERE run_id = %s",
            (run.run.id,),
        )
    swept = invoke("sweeper", {"source": "aws.events"})
    assert swept["republished"] == 1 and swept["watchdog"] == {"redriven": 0, "failed": 0}
    assert "pruned" in swept
    assert list(swept["errors"]) == [f"embedded:{broken.id}"]
    # Refused before any request: the server's key goes to its own endpoint only.
    assert "embedding_endpoint" in swept["errors"][f"embedded:{broken.id}"]


def test_local_workers_run_two_agents_steps_side_by_side(worker: Worker, org: Organization) -> None:
    """Each worker is its own execution environment: a slow model call of one agent does not
    hold up another's step (asked while the first is still waiting on the model)."""
    arrivals: list[float] = []
    both = threading.Event()  # no answer until both steps have asked the model

    def slow(request: Any) -> Reply:
        arrivals.append(time.monotonic())
        if len(arrivals) == 2:
            both.set()
        return Reply(text="slow answer", gate=both)

    worker.fake.when(lambda _: True, slow)
    # As on the real queue, visibility outlasts a step: with the fixture's 1 s, SQS would hand
    # the slow step to the other worker mid-call (answered already_done, but a third call).
    worker.sqs.set_queue_attributes(
        QueueUrl=worker.queue_url, Attributes={"VisibilityTimeout": "30"}
    )
    with worker.workers(2):
        started = [
            sending.send(
                worker.rt, org.id, a.id, [user(a, "hi")], RunOptions(max_steps=10), wait=False
            ).run
            for a in (make_agent(worker.rt.db, org), make_agent(worker.rt.db, org))
        ]
        for run in started:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if worker.run(org.id, run.id).status == "completed":
                    break
                time.sleep(0.1)
    # One worker at a time would have held the first answer until the fake gave up (30 s).
    assert len(arrivals) == 2 and worker.fake.gates_timed_out == 0


def hangs(request: Any) -> bool:
    return "PLEASE-HANG" in json.dumps(request.body)


def hanging_model(worker: Worker, db: Database, **settings: Any) -> tuple[threading.Event, Runtime]:
    """The fake model holds every call that says PLEASE-HANG until the event is set (others
    answer at once), and the runtime the test sends with: the worker's settings changed by
    `settings`, its queue's messages hidden 60 s (a hanging step is not delivered again
    meanwhile)."""
    hang = threading.Event()
    worker.fake.when(hangs, Reply(text="late", gate=hang))
    worker.fake.when(lambda r: not hangs(r), Reply(text="Hello, bystander."))
    changed = worker.rt.settings.model_copy(update=settings)
    rt = build_runtime(changed, db=db, queue=SqsStepQueue(worker.queue_url, worker.sqs))
    use_runtime(rt)
    worker.sqs.set_queue_attributes(
        QueueUrl=worker.queue_url, Attributes={"VisibilityTimeout": "60"}
    )
    return hang, rt


def test_an_organization_whose_model_hangs_leaves_workers_to_the_others(
    worker: Worker, db: Database
) -> None:
    """Four workers, as the local stack runs; one organization's six agents whose model
    hangs (async sends) and another organization's agent: with CAIRN_ORG_MAX_RUNS=3 the
    bystander's turn completes while every hanging call still hangs, and once they answer,
    the hanging organization's held-back runs all end too (woken as its runs end)."""
    from cairn.store import tenancy

    hang, rt = hanging_model(worker, db, org_max_runs=3)
    with db.transaction() as conn:
        noisy = tenancy.create_organization(conn, Organization(name="noisy"))
        quiet = tenancy.create_organization(conn, Organization(name="quiet"))
    try:
        with worker.workers(4):
            hanging = [
                sending.send(
                    rt,
                    noisy.id,
                    a.id,
                    [user(a, "PLEASE-HANG")],
                    RunOptions(max_steps=3),
                    wait=False,
                ).run
                for a in [make_agent(db, noisy) for _ in range(6)]
            ]
            eventually(lambda: len(worker.fake.requests) >= 3)
            bystander = make_agent(db, quiet)
            run = sending.send(
                rt,
                quiet.id,
                bystander.id,
                [user(bystander, "hi")],
                RunOptions(max_steps=3),
                wait=False,
            ).run
            eventually(lambda: worker.run(quiet.id, run.id).status == "completed")
            assert not hang.is_set() and len(worker.fake.requests) == 4  # 3 hang + bystander
            hang.set()
            for held in hanging:
                eventually(lambda h=held: worker.run(noisy.id, h.id).status == "completed", 60)
    finally:
        hang.set()
    assert worker.fake.gates_timed_out == 0


def test_an_organizations_own_max_runs_holds_it_to_fewer_agents_than_the_share(
    worker: Worker, db: Database
) -> None:
    """The operator's `max_runs` for one organization (migration 0037) replaces the share
    every organization has (CAIRN_ORG_MAX_RUNS=3): six workers; with its limit at 1, one of
    the small organization's four hanging runs calls the model at a time while the big one
    has three, a bystander's turn completes meanwhile, and every held-back run ends once the
    model answers."""
    from cairn.assembly.operator import operate
    from cairn.store import tenancy

    hang, rt = hanging_model(worker, db, org_max_runs=3)
    with db.transaction() as conn:
        small, big, quiet = (
            tenancy.create_organization(conn, Organization(name=n))
            for n in ("small", "big", "quiet")
        )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("CAIRN_ORG_MAX_RUNS", "3")
        shown = operate(db, {"action": "limits", "organization_id": small.id, "max_runs": 1})
    assert shown["limits"]["max_runs"] == 1

    def calls(word: str) -> int:
        return sum(f"PLEASE-HANG {word}" in json.dumps(r.body) for r in worker.fake.requests)

    started: dict[str, list[str]] = {}
    try:
        with worker.workers(6):
            for org, word in ((small, "small"), (big, "big")):
                started[org.id] = [
                    sending.send(
                        rt,
                        org.id,
                        a.id,
                        [user(a, f"PLEASE-HANG {word}")],
                        RunOptions(),
                        wait=False,
                    ).run.id
                    for a in [make_agent(db, org) for _ in range(4)]
                ]
            eventually(lambda: calls("small") >= 1 and calls("big") >= 3)
            bystander = make_agent(db, quiet)
            run = sending.send(
                rt, quiet.id, bystander.id, [user(bystander, "hi")], RunOptions(), wait=False
            ).run
            eventually(lambda: worker.run(quiet.id, run.id).status == "completed")
            assert (calls("small"), calls("big")) == (1, 3)
            hang.set()
            for org in (small, big):
                for run_id in started[org.id]:
                    eventually(
                        lambda o=org, r=run_id: worker.run(o.id, r).status == "completed", 60
                    )
    finally:
        hang.set()
    assert (calls("small"), calls("big")) == (4, 4)


def test_hangs_of_three_organizations_leave_a_fourth_its_turn_and_then_end_once(
    worker: Worker, db: Database
) -> None:
    """Six workers; three organizations with two agents each whose model never answers,
    each organization under its share (2). Without a reserve the six hangs take all six
    workers; with one (2 of 6 kept for organizations with nothing running) at most five
    hang at once and a fourth organization's turn completes while every hanging call still
    hangs. Then each hanging call is cut at its first-byte wait: every run ends `failed`
    with the reason, its model asked once and its message stored once (issue 46)."""
    from cairn.store import tenancy

    hang, rt = hanging_model(
        worker,
        db,
        org_max_runs=2,
        step_concurrency=6,
        org_reserve=2,
        llm_first_byte_seconds=6.0,
        llm_timeout_seconds=8.0,
    )
    with db.transaction() as conn:
        noisy = [
            tenancy.create_organization(conn, Organization(name=f"hung-{n}")) for n in range(3)
        ]
        quiet = tenancy.create_organization(conn, Organization(name="quiet"))
    hung = lambda: [r for r in worker.fake.requests if hangs(r)]  # noqa: E731
    try:
        with worker.workers(6):
            hanging = [
                (
                    org.id,
                    sending.send(
                        rt,
                        org.id,
                        a.id,
                        [user(a, "PLEASE-HANG")],
                        RunOptions(max_steps=3),
                        wait=False,
                    ).run,
                )
                for org in noisy
                for a in (make_agent(db, org), make_agent(db, org))
            ]
            # Each organization's first run, and seconds while the pool is above its reserve.
            eventually(lambda: len(hung()) >= 4)
            bystander = make_agent(db, quiet)
            run = sending.send(
                rt,
                quiet.id,
                bystander.id,
                [user(bystander, "hi")],
                RunOptions(max_steps=3),
                wait=False,
            ).run
            eventually(lambda: worker.run(quiet.id, run.id).status == "completed")
            statuses = [worker.run(org, r.id).status for org, r in hanging]
            assert "failed" not in statuses and 4 <= len(hung()) <= 5, (statuses, len(hung()))
            for org, held in hanging:  # cut at 6 s each; the ones held back hang after
                eventually(lambda o=org, h=held: worker.run(o, h.id).status == "failed", 90)
    finally:
        hang.set()
    assert len(hung()) == 6  # each hanging run asked its model once
    for org, held in hanging:
        ended = worker.run(org, held.id)
        assert ended.stop_reason == "llm_api_error", ended
        assert "CAIRN_LLM_FIRST_BYTE_SECONDS" in ended.error["message"], ended.error
        with db.connection() as conn:
            kept = messages.list_for_agent(conn, org, held.agent_id, limit=50)
            done = step_rows.list_steps(conn, org, held.id)
        assert [m.role for m in kept if m.role == "user"] == ["user"] and len(done) == 1


def test_a_queued_step_whose_model_takes_its_whole_time_fails_the_run_once(
    worker: Worker, org: Organization
) -> None:
    """Bounded by the step's time, every retry included, and not delivered again to hold
    another worker as long: the run fails with the timeout and its agent takes new work."""
    from cairn.llm import deadline

    hang = threading.Event()
    agent = make_agent(worker.rt.db, org)
    worker.fake.reply("late", gate=hang)
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=3), wait=False
    ).run
    body = json.dumps({"organization_id": org.id, "run_id": run.id, "step_index": 0})
    try:
        with deadline.within(1.5):  # the step function's remaining time, shortened
            assert step_worker.run_message(worker.rt, body, 1) == "timed_out"
    finally:
        hang.set()
    ended = worker.run(org.id, run.id)
    assert ended.status == "failed" and ended.stop_reason == "llm_api_error"
    assert "did not answer" in str(ended.error)
    worker.fake.reply("Back again.")
    again = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=3), wait=False
    )
    assert worker.drain(again.run.id, org.id).status == "completed"


def test_a_step_that_kills_its_worker_each_time_fails_after_three_starts(
    worker: Worker, org: Organization
) -> None:
    """Started (its claim took the agent) and never finished, three times: the run fails;
    a step only sent and never started is re-sent instead (the test above)."""
    agent = make_agent(worker.rt.db, org)
    run = sending.send(
        worker.rt, org.id, agent.id, [user(agent, "hi")], RunOptions(max_steps=10), wait=False
    )
    body = json.dumps({"organization_id": org.id, "run_id": run.run.id, "step_index": 0})

    def dies() -> None:
        with faults.crash_at("before_llm"), pytest.raises(faults.SimulatedCrash):
            step_worker.run_message(worker.rt, body, 1)

    assert _stalled_sweeps(worker, MAX_REDRIVES + 1, before_each=dies) == [
        {"redriven": 1, "failed": 0}
    ] * MAX_REDRIVES + [{"redriven": 0, "failed": 1}]
    with worker.rt.db.connection() as conn:
        failed = runs.get_run(conn, org.id, run.run.id)
    assert failed is not None and failed.error and "started 3 times" in failed.error["message"]


def test_a_batch_of_100_requests_is_published_ten_to_a_request_and_every_run_ends(
    worker: Worker, org: Organization
) -> None:
    """Published as SQS batches of ten and marked sent in one statement (one request and
    one round trip each took a 300-request batch 52 s to answer); four workers end them.
    A hundred shows the batching; 300 runs through one process's moto took 2-4 min."""
    from cairn.services import batches
    from cairn.services.requests import CreateBatch

    agents_ = [make_agent(worker.rt.db, org) for _ in range(20)]
    worker.fake.when(lambda _: True, Reply(text="ok"))
    calls: list[str] = []
    worker.sqs.meta.events.register(
        "before-call.sqs.*", lambda model, **_: calls.append(model.name)
    )
    body = {
        "requests": [
            {
                "agent_id": agents_[n % 20].id,
                "messages": [{"role": "user", "content": f"hello {n}"}],
            }
            for n in range(100)
        ]
    }
    started = time.monotonic()
    batch = batches.create(worker.rt, org.id, None, CreateBatch.model_validate(body))
    answered_in = time.monotonic() - started
    assert calls == ["SendMessageBatch"] * 10, calls[:5]
    with worker.rt.db.connection() as conn:
        unsent = conn.execute("SELECT count(*) AS n FROM outbox WHERE sent_at IS NULL").fetchone()
    assert unsent is not None and unsent["n"] == 0
    worker.sqs.set_queue_attributes(
        QueueUrl=worker.queue_url, Attributes={"VisibilityTimeout": "60"}
    )
    with worker.workers(4):
        eventually(lambda: _ended(worker, org.id, batch.run_ids) == 100, 300)
    print(f"a 100-request batch answered in {answered_in:.2f} s")


def _ended(worker: Worker, org_id: str, run_ids: list[str]) -> int:
    with worker.rt.db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM runs WHERE organization_id = %s AND id = ANY(%s) "
            "AND status IN ('completed', 'failed', 'cancelled')",
            (org_id, run_ids),
        ).fetchone()
    return int(row["n"]) if row else 0


def test_fifty_concurrent_tool_call_sends_to_one_agent_end_in_order_each_edit_once(
    worker: Worker, org: Organization
) -> None:
    """Fifty clients at once, one agent, four workers: every turn ends, in the order the
    runs were made, each memory edit once (the agent's steps never run side by side)."""
    from tests.e2e.crash_load import answers

    agent = make_agent(worker.rt.db, org)
    worker.fake.when(lambda _: True, answers)
    worker.sqs.set_queue_attributes(
        QueueUrl=worker.queue_url, Attributes={"VisibilityTimeout": "60"}
    )
    made: list[Any] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        run = sending.send(
            worker.rt,
            org.id,
            agent.id,
            [user(agent, f"remember fact-{n}")],
            RunOptions(max_steps=5),
            wait=False,
        ).run
        with lock:
            made.append(run)

    senders = [threading.Thread(target=client, args=(n,)) for n in range(50)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(60)
    with worker.workers(4):
        eventually(lambda: _ended(worker, org.id, [r.id for r in made]) == 50, 240)
    with worker.rt.db.connection() as conn:
        ended = [runs.get_run(conn, org.id, r.id) for r in made]
        value = conn.execute(
            "SELECT b.value FROM blocks b JOIN agents_blocks ab ON ab.block_id = b.id "
            "WHERE ab.agent_id = %s AND b.label = 'human'",
            (agent.id,),
        ).fetchone()["value"]  # type: ignore[index]
    assert all(r is not None and r.status == "completed" for r in ended)
    facts = [line for line in value.splitlines() if line.startswith("fact-")]
    in_creation_order = [
        f"fact-{r.request_config['input'][0]['content'][0]['text'].split('-')[-1]}"
        for r in sorted(made, key=lambda r: (r.created_at, r.id))
    ]
    assert facts == in_creation_order
