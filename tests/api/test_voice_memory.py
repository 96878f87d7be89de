"""Letta's voice memory tools as ordinary built-ins, through the whole stack: the user block
rewritten, numbered transcript lines kept as archival passages, and searched back."""

from __future__ import annotations

import ast
from typing import Any

from letta_client import Letta

from tests.api.conftest import Stack
from tests.api.test_custom_tools import tool_return
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}
TOOLS = ["rethink_user_memory", "finish_rethinking_memory", "store_memories", "search_memory"]
TRANSCRIPT = """Store what matters from these lines.
0. user: My order number is A-1138.
1. assistant: Thanks, noted.
2. user: I live in Lisbon and I like tea.
3. assistant: Lovely."""


def agent(client: Letta) -> Any:
    return client.agents.create(
        llm_config=LLM,
        tools=TOOLS,  # type: ignore[arg-type]
        memory_blocks=[{"label": "human", "value": "Unknown user."}],
    )


def test_rethink_rewrites_the_user_block_and_finish_ends_the_turn(stack: Stack) -> None:
    client = stack.client()
    a = agent(client)
    stack.fake.reply("", call("rethink_user_memory", new_memory="Lives in Lisbon. Likes tea."))
    stack.fake.reply("", call("finish_rethinking_memory"))
    stack.fake.reply("done")
    response = client.agents.messages.create(a.id, input=TRANSCRIPT)
    returns = [m for m in response.messages if m.message_type == "tool_return_message"]
    assert [r.status for r in returns] == ["success", "success"]  # type: ignore[attr-defined]
    human = client.agents.blocks.retrieve("human", agent_id=a.id)
    assert human.value == "Lives in Lisbon. Likes tea."


def test_stored_chunks_are_the_numbered_lines_and_search_finds_them(stack: Stack) -> None:
    client = stack.client()
    a = agent(client)
    chunks = [
        {"start_index": 0, "end_index": 1, "context": "The user's order is A-1138."},
        {"start_index": 2, "end_index": 3, "context": "The user lives in Lisbon, likes tea."},
    ]
    stack.fake.reply("", call("store_memories", chunks=chunks))
    stack.fake.reply("stored")
    stored = tool_return(client.agents.messages.create(a.id, input=TRANSCRIPT))
    assert stored.status == "success"  # type: ignore[attr-defined]
    passages = sorted(p.text for p in client.agents.passages.list(a.id))
    assert passages[1] == (
        "<memory><messages><message>user: My order number is A-1138.</message>"
        "<message>assistant: Thanks, noted.</message></messages>"
        "<context>The user's order is A-1138.</context></memory>"
    )
    assert "I live in Lisbon" in passages[0] and len(passages) == 2

    stack.fake.reply("", call("search_memory", convo_keyword_queries=["A-1138"]))
    stack.fake.reply("It is A-1138.")
    found = tool_return(client.agents.messages.create(a.id, input="What was my order number?"))
    # Shown as Cairn shows any JSON object a tool returns: Python's text of it.
    shown = ast.literal_eval(found.tool_return)  # type: ignore[attr-defined]
    contents = [hit["content"] for hit in shown["archival_search_results"]]
    assert sorted(contents) == passages  # both, nearest first, by the user's last words
    assert set(shown["archival_search_results"][0]) == {"timestamp", "content"}
    [hits] = shown["convo_keyword_search_results"].values()
    assert any("A-1138" in hit for hit in hits)


def test_a_chunk_outside_the_transcript_is_an_error_the_model_reads(stack: Stack) -> None:
    client = stack.client()
    a = agent(client)
    stack.fake.reply(
        "",
        call(
            "store_memories",
            chunks=[
                {"start_index": 7, "end_index": 9, "context": "nothing there"},
            ],
        ),
    )
    stack.fake.reply("oops")
    failed = tool_return(client.agents.messages.create(a.id, input=TRANSCRIPT))
    assert failed.status == "error"  # type: ignore[attr-defined]
    assert "start_index 7 and end_index 9" in failed.tool_return  # type: ignore[attr-defined]
    assert list(client.agents.passages.list(a.id)) == []
