"""Letta's memory_apply_patch built-in through the whole API: attached by name, called by
the model, its edit in the block and in the next system prompt."""

from __future__ import annotations

from tests.api.conftest import Stack
from tests.api.test_custom_tools import tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def test_the_model_patches_a_block_by_its_content(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(
        llm_config=LLM,  # type: ignore[arg-type]
        tools=["memory_apply_patch"],
        memory_blocks=[{"label": "todos", "value": "- [ ] Step 1\n- [ ] Step 2"}],
    )
    patch = "@@\n - [ ] Step 1\n+- [ ] Step 1.5\n - [ ] Step 2"
    stack.fake.reply("", call("memory_apply_patch", label="todos", patch=patch))
    stack.fake.reply("done")
    ret = tool_return(client.agents.messages.create(agent.id, input="plan"))
    assert ret.status == "success" and "has been edited" in ret.tool_return  # type: ignore[attr-defined]
    block = client.agents.blocks.retrieve("todos", agent_id=agent.id)
    assert block.value == "- [ ] Step 1\n- [ ] Step 1.5\n- [ ] Step 2"
    assert "Step 1.5" in stack.fake.requests[1].body["messages"][0]["content"]
    stack.fake.reply("", call("memory_apply_patch", label="todos", patch="@@\n-Step 9\n+x"))
    stack.fake.reply("ok")
    failed = tool_return(client.agents.messages.create(agent.id, input="again"))
    assert failed.status == "error" and "not found" in failed.tool_return  # type: ignore[attr-defined]
