"""The agent's search tools outside a step (`POST /v1/agents/{id}/tools/{name}/run`) answer
what the same call inside a step answers, and what the search routes find."""

from __future__ import annotations

import ast
import json
import uuid
from typing import Any

import httpx

from tests.api.conftest import Stack
from tests.fakes.llm_server import call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
SAID = [
    ("Caroline", "I went to an LGBTQ support group yesterday and it was so powerful."),
    ("Melanie", "Wow, that's cool! I'm off to paint a sunrise by the lake."),
    ("Caroline", "I researched adoption agencies last week."),
    ("Melanie", "The kids loved the pottery class, they made a dog-shaped bowl."),
]


def agent_with_memory(client: httpx.Client, stack: Stack) -> str:
    """An agent whose recall and archival memory both hold the conversation, embedded."""
    agent = client.post(
        "/v1/agents/",
        json={"llm_config": LLM, "tools": ["conversation_search", "archival_memory_search"]},
    ).json()["id"]
    items = [
        {
            "id": f"message-{uuid.uuid4()}",
            "role": "user" if who == "Caroline" else "assistant",
            "name": who,
            "content": text,
            "created_at": f"2023-05-08T13:{n:02d}:00Z",
        }
        for n, (who, text) in enumerate(SAID)
    ]
    captured = client.post(f"/v1/agents/{agent}/messages/capture", json={"messages": items})
    assert captured.status_code == 200, captured.text
    for n, (who, text) in enumerate(SAID):
        stored = client.post(
            f"/v1/agents/{agent}/archival-memory",
            json={"text": f"{who}: {text}", "created_at": f"2023-05-08T13:{n:02d}:00Z"},
        )
        assert stored.status_code == 200, stored.text
    eventually(stack.runtime.queue.embeddings.idle)  # type: ignore[attr-defined]
    return agent


def in_a_step(
    stack: Stack, client: httpx.Client, agent: str, tool: str, args: dict[str, Any]
) -> Any:
    stack.fake.reply("", call(tool, **args))
    stack.fake.reply("done")
    reply = client.post(f"/v1/agents/{agent}/messages", json={"input": "look it up"}).json()
    returned = next(m for m in reply["messages"] if m["message_type"] == "tool_return_message")
    assert returned["status"] == "success", returned
    return ast.literal_eval(returned["tool_return"])  # Letta shows str() of a dict return


def outside(client: httpx.Client, agent: str, tool: str, args: dict[str, Any]) -> Any:
    r = client.post(f"/v1/agents/{agent}/tools/{tool}/run", json={"args": args})
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "success", r.json()
    return json.loads(r.json()["func_return"])


def test_search_tools_run_outside_a_step_and_answer_as_in_one(stack: Stack) -> None:
    with httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=60
    ) as client:
        agent = agent_with_memory(client, stack)
        recall_args = {"query": "What did Caroline research?", "limit": 3}
        run = outside(client, agent, "conversation_search", recall_args)
        stepped = in_a_step(stack, client, agent, "conversation_search", recall_args)
        # the step's own turn is now in recall too: compare what both found of the conversation
        said = {text for _, text in SAID}
        shown = [r["content"] for r in run["results"]]
        assert shown[0] == "I researched adoption agencies last week."
        assert [c for c in (r["content"] for r in stepped["results"]) if c in said] == [
            c for c in shown if c in said
        ]
        routed = client.post(
            "/v1/agents/messages/search",
            json={"agent_id": agent, "query": recall_args["query"], "limit": 3},
        ).json()
        assert routed[0]["embedded_text"] == shown[0]

        archival_args = {"query": "When did Melanie paint a sunrise?", "top_k": 2}
        run = outside(client, agent, "archival_memory_search", archival_args)
        stepped = in_a_step(stack, client, agent, "archival_memory_search", archival_args)
        assert [r["content"] for r in run] == [r["content"] for r in stepped]
        assert run[0]["content"].startswith("Melanie: Wow, that's cool! I'm off to paint")
        assert run[0]["relevance"]["fts_rank"] == 1 and run[0]["relevance"]["vector_rank"]
        routed = client.get(
            f"/v1/agents/{agent}/archival-memory/search",
            params={"query": archival_args["query"], "top_k": 2},
        ).json()
        assert [r["content"] for r in routed["results"]] == [r["content"] for r in run]


def test_a_search_tool_refuses_bad_arguments_by_name(stack: Stack) -> None:
    with httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=60
    ) as client:
        agent = client.post(
            "/v1/agents/", json={"llm_config": LLM, "tools": ["conversation_search"]}
        ).json()["id"]
        r = client.post(
            f"/v1/agents/{agent}/tools/conversation_search/run",
            json={"args": {"query": "tea", "start_date": "not a date"}},
        )
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "error" and r.json()["func_return"] is None
        assert any("not a date" in line or "start" in line for line in r.json()["stderr"])
        missing = client.post(
            f"/v1/agents/{agent}/tools/conversation_search/run", json={"args": {}}
        )
        assert missing.json()["status"] == "error"
        assert any("query" in line for line in missing.json()["stderr"])
        # a model's odd numbers and texts: bounded, answered, never a server error
        for args in (
            {"query": "tea", "limit": -5},
            {"query": "tea", "limit": 10**9},
            {"query": ""},
            {"query": "tea " * 50_000},
        ):
            odd = client.post(
                f"/v1/agents/{agent}/tools/conversation_search/run", json={"args": args}
            )
            assert odd.status_code == 200, (args.keys(), odd.text[:300])
            assert odd.json()["status"] == "success", odd.json()
        everywhere = client.post("/v1/messages/search", json={"query": "tea " * 50_000})
        assert everywhere.status_code == 200, everywhere.text[:300]
