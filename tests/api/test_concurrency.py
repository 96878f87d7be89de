"""Many messages at once: each answered exactly once, in arrival order, per agent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import httpx
import pytest

from cairn.store.db import Database
from tests.api.conftest import Stack, make_stack
from tests.fakes.llm_server import Reply

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def echo(stack: Stack) -> None:
    """Answer every request with "re: <the last user text>"."""
    stack.fake.when(lambda r: True, lambda r: Reply(text=f"re: {r.last_text()}"))


def test_echo_rule_is_per_request(stack: Stack) -> None:
    echo(stack)
    with httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    ) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
        reply = client.post(f"/v1/agents/{agent['id']}/messages", json={"input": "ping"}).json()
    assert reply["messages"][0]["content"] == "re: ping"


def send_all(stack: Stack, targets: list[tuple[str, str]]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    barrier = threading.Barrier(len(targets))

    def one(agent_id: str, text: str) -> None:
        with httpx.Client(
            base_url=stack.url, timeout=60, headers={"Authorization": f"Bearer {stack.key}"}
        ) as client:
            barrier.wait()
            results[text] = client.post(f"/v1/agents/{agent_id}/messages", json={"input": text})

    threads = [threading.Thread(target=one, args=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def transcript(stack: Stack, agent_id: str) -> list[tuple[str, str]]:
    with httpx.Client(
        base_url=stack.url, timeout=30, headers={"Authorization": f"Bearer {stack.key}"}
    ) as client:
        rows = client.get(
            f"/v1/agents/{agent_id}/messages", params={"order": "asc", "limit": 1000}
        ).json()
    return [
        (m["message_type"], m["content"]) for m in rows if m["message_type"] != "system_message"
    ]


def test_twenty_messages_to_one_agent_complete_in_arrival_order(stack: Stack) -> None:
    echo(stack)
    with httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    ) as client:
        agent = client.post("/v1/agents/", json={"llm_config": LLM}).json()
    texts = [f"message {n}" for n in range(20)]
    results = send_all(stack, [(agent["id"], t) for t in texts])
    assert all(r.status_code == 200 for r in results.values()), [
        r.text for r in results.values() if r.status_code != 200
    ]
    for text, response in results.items():
        assert [m["content"] for m in response.json()["messages"]] == [f"re: {text}"]
    lines = transcript(stack, agent["id"])
    users = [c for kind, c in lines if kind == "user_message"]
    assert sorted(users) == sorted(texts) and len(users) == 20  # each exactly once
    # every answer follows its own question: runs never interleaved
    for (k1, question), (k2, answer) in zip(lines[::2], lines[1::2], strict=True):
        assert (k1, k2) == ("user_message", "assistant_message") and answer == f"re: {question}"
    # and the runs were answered in the order the agent took their messages (the order of
    # the transcript; a run's created_at is stamped before it queues for the agent, so two
    # sent at once may queue in the other order)
    with httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    ) as client:
        runs = client.get("/v1/runs/", params={"agent_id": agent["id"], "order": "asc"}).json()
    run_of = {text: response.json()["messages"][0]["run_id"] for text, response in results.items()}
    taken = [run_of[text] for text in users]
    answered = [r["id"] for r in sorted(runs, key=lambda r: r["completed_at"])]
    assert taken == answered


def test_twenty_agents_in_parallel_all_complete(stack: Stack) -> None:
    echo(stack)
    with httpx.Client(
        base_url=stack.url, headers={"Authorization": f"Bearer {stack.key}"}, timeout=30
    ) as client:
        agents = [
            client.post("/v1/agents/", json={"llm_config": LLM}).json()["id"] for _ in range(20)
        ]
    results = send_all(stack, [(a, f"hello {n}") for n, a in enumerate(agents)])
    assert all(r.status_code == 200 for r in results.values())
    for n, agent_id in enumerate(agents):
        assert transcript(stack, agent_id) == [
            ("user_message", f"hello {n}"),
            ("assistant_message", f"re: hello {n}"),
        ]


@pytest.fixture
def holding(db: Database) -> Iterator[Stack]:
    """A stack whose waits keep their environment (no `yielding`), as any slow request of
    the API might."""
    with make_stack(db, yielding=nullcontext) as made:
        yield made


def test_a_slow_request_holds_its_environment_only(holding: Stack) -> None:
    """An image URL that trickles a byte every 0.2 s, its fetch not giving the environment
    back (as any slow request of the API might not): health and another organization's
    requests answer while it is still being served (one environment once held all, 98 s)."""
    from tests.api.test_agent_messages import stack_other_org_client
    from tests.integration.test_llm_patience import Stalling

    stack = holding
    crawl = Stalling("crawls")
    try:
        client = stack.client()
        agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
        picture = [{"type": "image", "source": {"type": "url", "url": f"{crawl.url}/x.png"}}]
        slow = threading.Thread(
            target=lambda: httpx.post(
                f"{stack.url}/v1/agents/{agent.id}/messages",
                timeout=60,
                headers={"Authorization": f"Bearer {stack.key}"},
                json={"messages": [{"role": "user", "content": picture}]},
            )
        )
        slow.start()
        other = stack_other_org_client(stack)
        for _ in range(3):
            assert httpx.get(f"{stack.url}/v1/health/", timeout=60).status_code == 200
            assert other.agents.list().items == []  # type: ignore[attr-defined]
            assert [a.id for a in client.agents.list()] == [agent.id]
        assert slow.is_alive()  # all of that while the slow one was still being served
        slow.join()
    finally:
        crawl.close()


def test_two_organizations_requests_side_by_side_each_see_their_own(stack: Stack) -> None:
    """Requests in four environments at once: each resolves its own event and its own
    organization (Powertools keeps the event in class attributes, per thread here)."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.api.test_agent_messages import stack_other_org_client

    mine, theirs = stack.client(), stack_other_org_client(stack)
    ours = {mine.agents.create(llm_config=LLM, name=f"m{n}").id for n in range(3)}  # type: ignore[arg-type]
    other = {theirs.agents.create(llm_config=LLM, name=f"t{n}").id for n in range(3)}  # type: ignore[arg-type]

    def listed(client: Any) -> set[str]:
        return {a.id for a in client.agents.list()}

    with ThreadPoolExecutor(8) as pool:
        seen = list(pool.map(listed, [mine, theirs] * 40))
    assert seen == [ours, other] * 40
