"""Folders (and sources, their older name) through letta-client 1.5.0 and raw HTTP: made
with a pinned embedding config, listed page by page, renamed, attached to agents, counted,
deleted; names unique in an organization; another organization sees none of them."""

from __future__ import annotations

import httpx
import pytest
from letta_client import ConflictError, Letta, NotFoundError

from tests.api.conftest import Stack
from tests.api.test_agent_messages import stack_other_org_client

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def test_a_folder_is_made_listed_changed_and_deleted(stack: Stack) -> None:
    client = stack.client()
    made = [
        client.folders.create(
            name=f"docs-{n}",
            description="manuals",
            embedding="openai/text-embedding-3-small",
            embedding_chunk_size=512,
        )
        for n in range(5)
    ]
    first = made[0]
    assert first.id.startswith("source-") and first.embedding_config.embedding_chunk_size == 512
    assert first.embedding_config.embedding_model == "text-embedding-3-small"
    walked = [f.id for f in client.folders.list(limit=2)]  # the auto-pager, two a page
    assert walked == [f.id for f in made]  # Letta lists oldest first
    assert [f.id for f in client.folders.list(name="docs-3")] == [made[3].id]
    assert client.folders.retrieve(first.id).description == "manuals"
    changed = client.folders.update(first.id, name="handbook", instructions="read me first")
    assert (changed.name, changed.instructions, changed.description) == (
        "handbook",
        "read me first",
        "manuals",
    )
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    assert http.get("/v1/folders/count").json() == 5
    assert http.get("/v1/folders/name/handbook").json() == first.id
    stats = http.get("/v1/folders/metadata").json()
    assert stats["total_sources"] == 5 and stats["total_files"] == 0
    client.folders.delete(first.id)
    with pytest.raises(NotFoundError):
        client.folders.retrieve(first.id)
    assert http.get("/v1/folders/count").json() == 4


def test_names_are_unique_in_an_organization_and_bad_input_is_named(stack: Stack) -> None:
    client = stack.client()
    one = client.folders.create(name="notes")
    with pytest.raises(ConflictError):
        client.folders.create(name="notes")
    other = client.folders.create(name="other")
    with pytest.raises(ConflictError):
        client.folders.update(other.id, name="notes")
    assert client.folders.retrieve(other.id).name == "other"  # nothing half-written
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    bad = http.post("/v1/folders/", json={"name": ""})
    assert bad.status_code == 422 and "name" in bad.text
    unknown = http.post("/v1/folders/", json={"name": "x", "embedding": "nope/model"})
    assert unknown.status_code == 400 and "embedding" in unknown.text
    assert http.get("/v1/folders/not-an-id").status_code == 422
    # Another organization sees nothing of this one's folders, and may reuse its names.
    theirs = stack_other_org_client(stack)
    assert list(theirs.folders.list()) == []
    with pytest.raises(NotFoundError):
        theirs.folders.retrieve(one.id)
    assert theirs.folders.create(name="notes").id != one.id


def test_folders_attach_to_agents_of_their_organization(stack: Stack) -> None:
    client = stack.client()
    folder = client.folders.create(name="kb")
    ada = client.agents.create(name="ada", llm_config=LLM)  # type: ignore[arg-type]
    bob = client.agents.create(name="bob", llm_config=LLM)  # type: ignore[arg-type]
    for agent in (ada, bob):
        state = client.agents.folders.attach(folder.id, agent_id=agent.id)
        assert state is not None and state.id == agent.id
    assert sorted(client.folders.agents.list(folder.id)) == sorted([ada.id, bob.id])
    assert [f.id for f in client.agents.folders.list(ada.id)] == [folder.id]
    client.agents.folders.detach(folder.id, agent_id=ada.id)
    assert list(client.agents.folders.list(ada.id)) == []
    assert client.folders.agents.list(folder.id) == [bob.id]
    theirs = stack_other_org_client(stack)
    eve = theirs.agents.create(name="eve", llm_config=LLM)  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):  # their agent, our folder
        theirs.agents.folders.attach(folder.id, agent_id=eve.id)
    client.folders.delete(folder.id)  # detached from every agent with it
    assert list(client.agents.folders.list(bob.id)) == []


def test_sources_are_the_same_folders_under_their_older_name(stack: Stack) -> None:
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"})
    made = http.post("/v1/sources/", json={"name": "legacy", "description": "old"}).json()
    assert made["vector_db_provider"] == "native" and made["embedding_config"]
    client: Letta = stack.client()
    assert client.folders.retrieve(made["id"]).name == "legacy"
    assert http.get("/v1/sources/count").json() == 1
    assert [s["id"] for s in http.get("/v1/sources/").json()] == [made["id"]]
    agent = client.agents.create(name="ada", llm_config=LLM)  # type: ignore[arg-type]
    attached = http.patch(f"/v1/agents/{agent.id}/sources/attach/{made['id']}")
    assert attached.status_code == 200 and attached.json()["id"] == agent.id
    assert [s["id"] for s in http.get(f"/v1/agents/{agent.id}/sources").json()] == [made["id"]]
    assert http.get(f"/v1/sources/{made['id']}/agents").json() == [agent.id]
    renamed = http.patch(f"/v1/sources/{made['id']}", json={"name": "renamed"}).json()
    assert renamed["name"] == "renamed"
    assert http.delete(f"/v1/sources/{made['id']}").status_code == 200
    assert http.get(f"/v1/sources/{made['id']}").status_code == 404
