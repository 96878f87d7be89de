"""Letta's jobs (/v1/jobs; letta-client 1.5.0 has no methods for them: driven over HTTP): a
message batch is a job by its id, read, cancelled and deleted here; the listings show jobs
of type `job`, of which Letta 0.16.1 makes none and Cairn neither. And the estimated size of
the organization's archival embeddings (/v1/embeddings/total_storage_size)."""

from __future__ import annotations

import threading

import httpx

from tests.api.conftest import Stack
from tests.api.test_agent_messages import stack_other_org_client
from tests.api.test_batches import agents, settled

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def http(stack: Stack, key: str | None = None) -> httpx.Client:
    auth = {"Authorization": f"Bearer {key or stack.key}"}
    return httpx.Client(base_url=f"{stack.url}/v1", headers=auth, timeout=30)


def test_a_batch_is_a_job_read_cancelled_and_deleted_by_its_id(stack: Stack) -> None:
    client = stack.client()
    ada, bob = agents(client, 2)
    held = threading.Event()
    stack.fake.reply("hello", gate=held)
    stack.fake.reply("hello")
    batch = client.batches.create(
        requests=[{"agent_id": ada, "input": "hi"}, {"agent_id": bob, "input": "hi"}]
    )
    with http(stack) as api:
        job = api.get(f"/jobs/{batch.id}").json()
        assert job["id"] == batch.id and job["job_type"] == "batch"
        assert job["status"] == "running"
        assert api.get("/jobs/").json() == [] and api.get("/jobs/active").json() == []
        cancelled = api.patch(f"/jobs/{batch.id}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        held.set()
        assert settled(client, batch.id) == "cancelled"
        assert api.patch(f"/jobs/{batch.id}/cancel").json() is False  # as Letta: ended
        assert api.delete(f"/jobs/{batch.id}").json()["id"] == batch.id
        assert api.get(f"/jobs/{batch.id}").status_code == 404
        run_id = (batch.metadata or {})["run_ids"][0]
        assert client.runs.retrieve(run_id).id == run_id  # its runs stay
        bad = api.get("/jobs/batch-1")
        assert bad.status_code in (400, 422) and "job_id" in bad.text
    other = stack_other_org_client(stack)
    theirs = other.batches.create(requests=[{"agent_id": agents(other, 1)[0], "input": "x"}])
    with http(stack) as api:
        assert api.get(f"/jobs/{theirs.id}").status_code == 404
        assert api.delete(f"/jobs/{theirs.id}").status_code == 404


def test_the_embeddings_size_counts_the_organizations_passages_as_letta_estimates(
    stack: Stack,
) -> None:
    client = stack.client()
    (ada,) = agents(client, 1)
    for text in ("one", "two", "three"):
        client.agents.passages.create(ada, text=text)
    with http(stack) as api:
        size = api.get("/embeddings/total_storage_size", headers={"storage-unit": "B"})
        assert size.json() == 3 * 4 * 4096  # Letta's estimate: 4,096 dimensions of 4 bytes
        assert api.get("/embeddings/total_storage_size").json() == 3 * 4 * 4096 / 1024**3
        kb = api.get("/embeddings/total_storage_size", headers={"storage_unit": "KB"})
        assert kb.json() == 48.0
        bad = api.get("/embeddings/total_storage_size", headers={"storage-unit": "PB"})
        assert bad.status_code == 400 and "storage_unit" in bad.text
    theirs = stack_other_org_client(stack).api_key
    with http(stack, theirs) as api:
        assert api.get("/embeddings/total_storage_size").json() == 0
