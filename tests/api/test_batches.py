"""Message batches through letta-client 1.5.0: one message to each of many agents, run in
the background; read, listed, cancelled, and their messages paged."""

from __future__ import annotations

import pytest
from letta_client import Letta, NotFoundError, UnprocessableEntityError

from tests.api.conftest import Stack
from tests.fakes.llm_server import Reply
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
MISSING_AGENT = "agent-00000000-0000-4000-8000-000000000000"


def agents(client: Letta, count: int) -> list[str]:
    return [client.agents.create(llm_config=LLM).id for _ in range(count)]  # type: ignore[arg-type]


def settled(client: Letta, batch_id: str) -> str:
    return eventually(
        lambda: (status := client.batches.retrieve(batch_id).status) != "running" and status
    )


def test_a_batch_runs_each_agent_on_its_message_and_pages_what_they_said(stack: Stack) -> None:
    client = stack.client()
    ada, bob = agents(client, 2)
    stack.fake.when(lambda r: "to ada" in r.last_text(), Reply(text="hello ada"))
    stack.fake.when(lambda r: "to bob" in r.last_text(), Reply(text="hello bob"))
    batch = client.batches.create(
        requests=[
            {"agent_id": ada, "messages": [{"role": "user", "content": "to ada"}]},
            {"agent_id": bob, "input": "to bob"},
        ]
    )
    assert batch.id.startswith("job-") and batch.job_type == "batch"
    assert settled(client, batch.id) == "completed"
    assert client.batches.retrieve(batch.id).completed_at is not None

    said = list(client.batches.messages.list(batch.id, limit=1))  # the pager, page by page
    by_agent = {(m.agent_id, m.role) for m in said}
    assert {(ada, "user"), (ada, "assistant"), (bob, "user"), (bob, "assistant")} <= by_agent
    assert len({m.id for m in said}) == len(said)
    order = [m.id for m in said]
    assert order == [m.id for m in client.batches.messages.list(batch.id, limit=100)]
    only_bob = list(client.batches.messages.list(batch.id, agent_id=bob))
    assert only_bob and {m.agent_id for m in only_bob} == {bob}
    # Each agent's history has its message and its answer, as after any send.
    history = [getattr(m, "content", None) for m in client.agents.messages.list(ada)]
    assert "to ada" in history and "hello ada" in history
    assert list(client.batches.list()) == []  # Letta lists running batches only


def test_a_batch_with_a_bad_request_starts_nothing(stack: Stack) -> None:
    client = stack.client()
    (ada,) = agents(client, 1)
    with pytest.raises(NotFoundError, match=MISSING_AGENT):
        client.batches.create(
            requests=[{"agent_id": ada, "input": "hi"}, {"agent_id": MISSING_AGENT, "input": "hi"}]
        )
    with pytest.raises(UnprocessableEntityError, match="messages"):
        client.batches.create(requests=[{"agent_id": ada, "input": "hi"}, {"agent_id": ada}])
    with pytest.raises(UnprocessableEntityError, match="requests"):
        client.batches.create(requests=[])
    assert list(client.runs.list()) == [] and stack.fake.requests == []
    with pytest.raises(NotFoundError):
        client.batches.retrieve("job-00000000-0000-4000-8000-000000000000")


def test_cancelling_a_batch_cancels_its_runs_still_going(stack: Stack) -> None:
    client = stack.client()
    ada, bob, cy = agents(client, 3)
    for _ in range(3):
        stack.fake.reply("slow", delay=1.0)
    first = client.batches.create(requests=[{"agent_id": ada, "input": "one"}])
    second = client.batches.create(
        requests=[{"agent_id": bob, "input": "two"}, {"agent_id": cy, "input": "three"}]
    )
    running = list(client.batches.list(limit=1))  # two pages through the SDK's pager
    assert {b.id for b in running} == {first.id, second.id}
    client.batches.cancel(second.id)
    assert client.batches.retrieve(second.id).status == "cancelled"
    statuses = {r.id: r.status for r in client.runs.list(limit=100)}
    second_runs = client.batches.retrieve(second.id).metadata["run_ids"]  # type: ignore[index]
    assert {statuses[r] for r in second_runs} == {"cancelled"}
    assert settled(client, first.id) == "completed"
    assert [b.id for b in client.batches.list()] == []
