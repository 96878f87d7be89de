"""The official letta-client 1.5.0 driving Cairn end to end, with the fake LLM."""

from __future__ import annotations

from typing import Any

import pytest
from letta_client import APIStatusError, Letta, NotFoundError

from tests.api.conftest import Stack
from tests.fakes.llm_server import call
from tests.waiting import eventually

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def test_agent_lifecycle_with_the_real_client(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(
        name="ada-helper",
        memory_blocks=[
            {"label": "human", "value": "Name: Ada"},
            {"label": "persona", "value": "I am Sam."},
        ],
        llm_config=LLM,
    )  # type: ignore[arg-type]
    assert agent.id.startswith("agent-") and agent.agent_type == "letta_v1_agent"
    assert {b.label for b in agent.memory.blocks} == {"human", "persona"}

    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    stack.fake.reply("Noted, you like tea.")
    response = client.agents.messages.create(
        agent.id, messages=[{"role": "user", "content": "I like tea"}]
    )
    assert response.stop_reason.stop_reason == "end_turn"
    kinds = [m.message_type for m in response.messages]
    assert kinds == ["tool_call_message", "tool_return_message", "assistant_message"]
    assert response.messages[-1].content == "Noted, you like tea."
    assert response.usage.step_count == 2

    listed = client.agents.messages.list(agent.id, order="asc", limit=50)
    texts = [getattr(m, "content", None) for m in listed.items]
    assert "I like tea" in texts and "Noted, you like tea." in texts

    block = client.agents.blocks.retrieve("human", agent_id=agent.id)
    assert block.value == "Name: Ada\nLikes: tea"
    client.agents.blocks.update("human", agent_id=agent.id, value="Name: Ada Lovelace")
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Name: Ada Lovelace"

    client.agents.passages.create(agent.id, text="Ada takes tea at five", tags=["habits"])
    found = client.agents.passages.search(agent.id, query="tea")
    assert [r.content for r in found.results] == ["Ada takes tea at five"]

    client.agents.delete(agent.id)
    with pytest.raises(NotFoundError):
        client.agents.retrieve(agent.id)


def approving_agent(client: Letta) -> Any:
    """An agent whose memory_insert waits for a person's approval."""
    agent = client.agents.create(
        memory_blocks=[{"label": "human", "value": "Name: Ada"}], llm_config=LLM
    )  # type: ignore[arg-type]
    client.agents.tools.update_approval(
        "memory_insert", agent_id=agent.id, body_requires_approval=True
    )
    return agent


def test_approval_flow_approve_and_deny(stack: Stack) -> None:
    client = stack.client()
    agent = approving_agent(client)
    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    first = client.agents.messages.create(agent.id, input="remember tea")
    assert first.stop_reason.stop_reason == "requires_approval"
    request = first.messages[-1]
    assert request.message_type == "approval_request_message"
    with pytest.raises(APIStatusError) as err:
        client.agents.messages.create(agent.id, input="hello?")
    assert err.value.status_code == 409
    assert err.value.body["detail"]["code"] == "PENDING_APPROVAL"  # type: ignore[index]

    stack.fake.reply("Saved.")
    approved = client.agents.messages.create(
        agent.id,
        messages=[
            {
                "type": "approval",
                "approvals": [
                    {
                        "type": "approval",
                        "tool_call_id": request.tool_call.tool_call_id,
                        "approve": True,
                    }
                ],
            }
        ],
    )  # type: ignore[list-item]
    assert approved.stop_reason.stop_reason == "end_turn"
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value.endswith("Likes: tea")

    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: coffee"))
    second = client.agents.messages.create(agent.id, input="also coffee")
    call_id = second.messages[-1].tool_call.tool_call_id
    stack.fake.reply("OK, I won't.")
    denied = client.agents.messages.create(
        agent.id,
        messages=[
            {
                "type": "approval",
                "approvals": [
                    {
                        "type": "approval",
                        "tool_call_id": call_id,
                        "approve": False,
                        "reason": "not coffee",
                    }
                ],
            }
        ],
    )  # type: ignore[list-item]
    returns = [m for m in denied.messages if m.message_type == "tool_return_message"]
    assert returns[0].status == "error" and "not coffee" in returns[0].tool_return
    assert "coffee" not in client.agents.blocks.retrieve("human", agent_id=agent.id).value


def test_async_send_and_poll(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("hello later")
    run = client.agents.messages.create_async(agent.id, input="hi")
    assert run.status in ("created", "running", "completed")
    run = eventually(
        lambda: (
            (r := client.runs.retrieve(run.id)).status in ("completed", "failed", "cancelled") and r
        )
    )
    assert run.status == "completed" and run.stop_reason == "end_turn"
    messages = client.runs.messages.list(run.id)
    assert [m.message_type for m in messages.items] == ["user_message", "assistant_message"]
    steps = client.runs.steps.list(run.id)
    assert len(steps.items) == 1


def test_errors_are_4xx_never_500(stack: Stack) -> None:
    client = stack.client()
    with pytest.raises(NotFoundError):
        client.agents.retrieve("agent-00000000-0000-4000-8000-000000000000")
    with pytest.raises(APIStatusError) as bad_id:
        client.agents.retrieve("agent-123")
    assert bad_id.value.status_code == 422
    with pytest.raises(APIStatusError) as missing_model:
        client.agents.create(name="x")
    assert missing_model.value.status_code == 400
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    with pytest.raises(APIStatusError) as empty:
        client.agents.messages.create(agent.id, messages=[])
    assert empty.value.status_code == 422
    with pytest.raises(APIStatusError) as too_long:
        client.agents.blocks.update("persona", agent_id=agent.id, value="x")
    assert too_long.value.status_code == 404  # no persona block on this agent


@pytest.mark.parametrize("by_run_id", [False, True])
def test_cancelling_a_run_that_waits_for_approval_closes_it_and_frees_the_agent(
    stack: Stack, by_run_id: bool
) -> None:
    client = stack.client()
    agent = approving_agent(client)
    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    first = client.agents.messages.create(agent.id, input="remember tea")
    assert first.stop_reason.stop_reason == "requires_approval"
    call_id = first.messages[-1].tool_call.tool_call_id
    asked = len(stack.fake.requests)
    run_ids = [first.messages[-1].run_id] if by_run_id else None
    cancelled = client.agents.messages.cancel(agent.id, run_ids=run_ids)
    assert first.messages[-1].run_id in dict(cancelled)

    def closed() -> bool:
        runs = client.runs.list(agent_id=agent.id)
        return all(r.status in ("completed", "cancelled", "failed") for r in runs)

    eventually(closed)
    # The call was denied as cancelled, not run; the model was not asked about it.
    assert client.agents.blocks.retrieve("human", agent_id=agent.id).value == "Name: Ada"
    assert len(stack.fake.requests) == asked
    history = client.agents.messages.list(agent.id, order="asc", limit=50).items
    returns = [m for m in history if m.message_type == "tool_return_message"]
    assert [r.tool_call_id for r in returns] == [call_id]
    assert returns[0].status == "error" and "cancelled" in str(returns[0].tool_return)
    # The agent answers again.
    stack.fake.reply("Hello again.")
    again = client.agents.messages.create(agent.id, input="hello?")
    assert again.stop_reason.stop_reason == "end_turn"
    assert again.messages[-1].content == "Hello again."
