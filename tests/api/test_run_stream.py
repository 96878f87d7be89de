"""Resuming a background run's stream (POST /v1/runs/{run_id}/stream) through
letta-client 1.5.0: the events come from Postgres, numbered, from any point."""

from __future__ import annotations

import pytest
from letta_client import BadRequestError

from tests.api.conftest import Stack
from tests.fakes.llm_server import call

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def test_a_background_stream_is_read_again_whole_or_from_a_sequence_number(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, agent_type="memgpt_v2_agent")  # type: ignore[arg-type]
    stack.fake.reply("", call("send_message", message="Hello again."))
    live = list(client.agents.messages.stream(agent.id, input="hi", background=True))
    run_id = next(e.run_id for e in live if getattr(e, "run_id", None))

    replayed = list(client.runs.messages.stream(run_id))
    kinds = [e.message_type for e in replayed]
    assert kinds[-2:] == ["stop_reason", "usage_statistics"]
    assert [e.message_type for e in live] == kinds  # the same events the client saw live
    seqs = [e.seq_id for e in replayed if hasattr(e, "seq_id")]
    assert seqs == list(range(1, len(replayed) + 1))
    assert "Hello again." in [getattr(e, "content", None) for e in replayed]

    later = list(client.runs.messages.stream(run_id, starting_after=2))
    assert [e.seq_id for e in later if hasattr(e, "seq_id")] == seqs[2:]


def test_a_run_still_going_answers_what_it_has_and_is_resumed_after_it(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM, agent_type="memgpt_v2_agent")  # type: ignore[arg-type]
    stack.fake.reply("", call("conversation_search", query="tea"))
    stack.fake.reply("", call("send_message", message="Found it."), delay=1.5)
    run = client.agents.messages.create_async(agent.id, input="what about tea?")
    stack.runtime.settings.stream_budget_seconds = 0.8
    first = list(client.runs.messages.stream(run.id))
    assert first and "stop_reason" not in [e.message_type for e in first]
    stack.runtime.settings.stream_budget_seconds = 20
    last = max(e.seq_id for e in first if hasattr(e, "seq_id"))
    rest = list(client.runs.messages.stream(run.id, starting_after=last))
    assert [e.message_type for e in rest][-2:] == ["stop_reason", "usage_statistics"]
    assert min(e.seq_id for e in rest if hasattr(e, "seq_id")) == last + 1
    assert "Found it." in [getattr(e, "content", None) for e in rest]


def test_a_run_not_in_background_cannot_be_streamed_again(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=LLM)  # type: ignore[arg-type]
    stack.fake.reply("ok")
    sent = client.agents.messages.create(agent.id, input="hi")
    with pytest.raises(BadRequestError, match="background"):
        list(client.runs.messages.stream(sent.messages[0].run_id or ""))
