"""`make dev` killed with SIGKILL inside a rewind and inside a fork (every statement sent,
COMMIT not yet), then started again on its data: the agent is as it was before, whole, and
the same request then succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_crash_recovery import EMBEDDING, KEY, Stack, _stop_postgres, answers
from tests.fakes.llm_server import FakeLLM

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    with FakeLLM() as fake:
        fake.when(lambda _: True, answers)
        made = Stack(tmp_path / "cairn", fake)
        try:
            yield made
        finally:
            made.stop()
            _stop_postgres(tmp_path / "cairn" / "pgdata")


def _history(stack: Stack, agent_id: str) -> list[dict]:
    with httpx.Client(
        base_url=f"http://127.0.0.1:{stack.port}/v1",
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=30,
    ) as http:
        found: list[dict] = http.get(f"/agents/{agent_id}/history").json()
    return found


def _post(stack: Stack, path: str, body: dict) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{stack.port}/v1{path}",
        headers={"Authorization": f"Bearer {KEY}"},
        json=body,
        timeout=30,
    )


@pytest.mark.parametrize("action", ["rewind", "fork"])
def test_a_kill_inside_a_rewind_or_fork_leaves_the_agent_as_it_was(
    stack: Stack, action: str
) -> None:
    client = stack.start()
    agent = client.agents.create(
        name="ada",
        memory_blocks=[{"label": "human", "value": "Name: Ada"}],
        llm_config=LLM,
        embedding_config=EMBEDDING,
    )  # type: ignore[arg-type]
    for fact in ("likes tea", "likes coffee"):
        client.agents.messages.create(
            agent.id, messages=[{"role": "user", "content": f"remember {fact}"}]
        )
    before = _history(stack, agent.id)
    first_turn = [v for v in before if v["kind"] == "step"][-2]["version"]
    value = client.agents.blocks.retrieve("human", agent_id=agent.id).value
    agents_before = {a.id for a in client.agents.list()}
    stack.stop()

    stack.start(crash_at=f"inside_{action}")
    with pytest.raises(httpx.HTTPError):
        _post(stack, f"/agents/{agent.id}/{action}", {"version": first_turn})
    stack.killed()

    client = stack.start()
    assert _history(stack, agent.id) == before  # no version half-written
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == value
    assert {a.id for a in client.agents.list()} == agents_before  # no fork half-made
    done = _post(stack, f"/agents/{agent.id}/{action}", {"version": first_turn})
    assert done.status_code == 200, done.text
    if action == "rewind":
        assert _history(stack, agent.id)[0]["kind"] == "rewind"
        assert "likes coffee" not in client.agents.blocks.retrieve("human", agent_id=agent.id).value
    else:
        assert len({a.id for a in client.agents.list()} - agents_before) == 1
