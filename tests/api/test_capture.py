"""History capture: messages appended without running the agent, searchable like any other."""

from __future__ import annotations

import uuid

import httpx

from tests.api.conftest import Stack
from tests.fakes.llm_server import call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def client_for(stack: Stack) -> httpx.Client:
    return httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    )


def test_capture_to_recall_only_is_idempotent_and_searchable(stack: Stack) -> None:
    ids = [f"message-{uuid.uuid4()}" for _ in range(2)]
    body = {
        "messages": [
            {
                "id": ids[0],
                "role": "user",
                "content": "We agreed the launch is on the ninth of March",
            },
            {"id": ids[1], "role": "assistant", "content": "Noted: launch on March 9th"},
        ]
    }
    with client_for(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        path = f"/v1/agents/{agent['id']}/messages/capture"
        first = client.post(path, json=body)
        assert first.status_code == 200, first.text
        assert [m["id"] for m in first.json()] == ids
        assert [m["id"] for m in client.post(path, json=body).json()] == ids  # no duplicates
        history = client.get(f"/v1/agents/{agent['id']}/messages", params={"order": "asc"}).json()
        assert [m["id"] for m in history].count(ids[0]) == 1
        context = client.get(f"/v1/agents/{agent['id']}").json()["message_ids"]
        assert ids[0] not in context  # recall only
        stack.fake.reply("", call("conversation_search", query="launch March"))
        stack.fake.reply("It is on March 9th.")
        # Embeddings are queued work, off the request path.
        eventually(stack.runtime.queue.embeddings.idle)  # type: ignore[attr-defined]
        reply = client.post(
            f"/v1/agents/{agent['id']}/messages", json={"input": "when is the launch?"}
        ).json()
    found = next(m for m in reply["messages"] if m["message_type"] == "tool_return_message")
    assert "ninth of March" in found["tool_return"] and "'hybrid'" in found["tool_return"]


def test_capture_into_the_context_window(stack: Stack) -> None:
    with client_for(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        captured = client.post(
            f"/v1/agents/{agent['id']}/messages/capture",
            json={
                "messages": [{"role": "user", "content": "imported from another system"}],
                "add_to_context": True,
            },
        ).json()
        context = client.get(f"/v1/agents/{agent['id']}").json()["message_ids"]
        assert context[-1] == captured[0]["id"]
        stack.fake.reply("I see the import.")
        client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "what did I import?"})
    sent = [m["content"] for m in stack.fake.requests[-1].body["messages"]]
    assert "imported from another system" in sent


def test_capture_rejects_bad_input(stack: Stack) -> None:
    with client_for(stack) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        path = f"/v1/agents/{agent['id']}/messages/capture"
        assert client.post(path, json={"messages": []}).status_code == 422
        assert (
            client.post(path, json={"messages": [{"id": "message-1", "content": "x"}]}).status_code
            == 422
        )
        other = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        mine = f"message-{uuid.uuid4()}"
        client.post(path, json={"messages": [{"id": mine, "content": "mine"}]})
        stolen = client.post(
            f"/v1/agents/{other['id']}/messages/capture",
            json={"messages": [{"id": mine, "content": "theirs"}]},
        )
        assert stolen.status_code == 409
