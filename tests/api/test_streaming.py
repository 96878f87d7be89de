"""Streams as clients read them: events as the turn makes them, tokens as the model writes
them, over the local bridge (chunked), with the unchanged letta-client and raw HTTP."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from tests.api.conftest import Stack
from tests.fakes.llm_server import Reply, call
from tests.waiting import eventually

GPT = {"model": "gpt-fake-mini", "model_endpoint_type": "openai", "context_window": 32000}
CLAUDE = {"model": "claude-fake", "model_endpoint_type": "anthropic", "context_window": 32000}


@contextmanager
def opened(stack: Stack, agent_id: str, body: dict[str, Any]) -> Iterator[httpx.Response]:
    """A stream's response, open; the connection closes when the block ends."""
    with (
        httpx.Client(timeout=30) as http,
        http.stream(
            "POST",
            f"{stack.url}/v1/agents/{agent_id}/messages/stream",
            headers={"Authorization": f"Bearer {stack.key}"},
            json=body,
        ) as answer,
    ):
        yield answer


def raw_stream(stack: Stack, agent_id: str, body: dict[str, Any]) -> list[tuple[float, str]]:
    """Each SSE line with the time it arrived, read straight off the socket."""
    lines: list[tuple[float, str]] = []
    with opened(stack, agent_id, body) as answer:
        assert answer.status_code == 200, answer.read()
        assert answer.headers["content-type"].startswith("text/event-stream")
        assert answer.headers.get("transfer-encoding") == "chunked"
        for line in answer.iter_lines():
            if line:
                lines.append((time.monotonic(), line))
    return lines


def first_event_then_leave(stack: Stack, agent_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """The stream's first event; then the client closes the connection."""
    with opened(stack, agent_id, body) as answer:
        first: dict[str, Any] = json.loads(next(line for line in answer.iter_lines() if line)[6:])
    return first


def events(lines: list[tuple[float, str]]) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for _, line in lines if line.startswith("data: {")]


def test_each_step_is_sent_when_it_commits_not_when_the_turn_ends(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    # The second step's model answers only once the reader has the first step's call and
    # return: a stream that sent the steps at the turn's end would hold it to its 30 s cap.
    first_step_read = threading.Event()
    stack.fake.reply("", call("conversation_search", query="tea"))
    stack.fake.reply("Tea it is.", gate=first_step_read)
    kinds: list[str] = []
    for event in client.agents.messages.stream(agent.id, input="tea?"):
        kinds.append(event.message_type)
        if event.message_type == "tool_return_message":
            first_step_read.set()
    assert kinds == [
        "tool_call_message",
        "tool_return_message",
        "assistant_message",
        "stop_reason",
        "usage_statistics",
    ]
    assert stack.fake.gates_timed_out == 0


def test_tokens_arrive_as_the_model_writes_them_and_add_up_to_the_stored_message(
    stack: Stack,
) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    text = "The kettle is on, and the tea will be ready soon."
    stack.fake.reply(text, reasoning="They want tea.", chunk_delay=0.05)
    lines = raw_stream(stack, agent.id, {"input": "tea?", "stream_tokens": True})
    got = events(lines)
    pieces = [e for e in got if e["message_type"] == "assistant_message"]
    thoughts = [e for e in got if e["message_type"] == "reasoning_message"]
    assert len(pieces) > 5 and len(thoughts) > 1
    assert "".join(p["content"] for p in pieces) == text
    assert "".join(t["reasoning"] for t in thoughts) == "They want tea."
    # Pieces of one message share its id; each run of one type has its own otid.
    assert len({p["id"] for p in pieces + thoughts}) == 1
    assert len({p["otid"] for p in pieces}) == 1 != len({p["otid"] for p in pieces + thoughts})
    # The first piece reached the client well before the last.
    times = [t for t, line in lines if '"assistant_message"' in line]
    assert times[-1] - times[0] > 0.3
    assert [e["message_type"] for e in got[-2:]] == ["stop_reason", "usage_statistics"]
    assert lines[-1][1] == "data: [DONE]"
    stored = client.agents.messages.list(agent.id, order="asc").items
    said = [m for m in stored if m.message_type == "assistant_message"]
    assert [m.id for m in said] == [pieces[0]["id"]] and said[0].content == text


def test_anthropic_tool_call_arguments_stream_and_add_up_to_the_stored_call(
    stack: Stack,
) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=CLAUDE)  # type: ignore[arg-type]
    stack.fake.reply(
        "", call("archival_memory_search", query="green tea from Uji"), reasoning="Look it up."
    )
    stack.fake.reply("Found it.")
    got = events(raw_stream(stack, agent.id, {"input": "tea?", "stream_tokens": True}))
    calls = [e for e in got if e["message_type"] == "tool_call_message"]
    assert len(calls) > 3
    assert calls[0]["tool_call"]["name"] == "archival_memory_search"
    assert all(c["tool_call"]["name"] is None for c in calls[1:])  # named once, as Letta does
    arguments = "".join(c["tool_call"]["arguments"] for c in calls)
    assert json.loads(arguments) == {"query": "green tea from Uji"}
    stored = client.agents.messages.list(agent.id, order="asc").items
    call_message = next(m for m in stored if m.message_type == "tool_call_message")
    assert call_message.id == calls[0]["id"]
    assert call_message.tool_call.arguments == arguments  # type: ignore[union-attr]
    kinds = [e["message_type"] for e in got]
    assert kinds.index("tool_return_message") > kinds.index("tool_call_message")
    assert "Found it." in "".join(e.get("content") or "" for e in got)
    # The beta Messages API, tool arguments in fine pieces, as Letta's client streams it.
    streamed = stack.fake.requests[-1]
    assert streamed.path == "/v1/messages?beta=true"
    headers = {k.lower(): v for k, v in streamed.headers.items()}
    assert "fine-grained-tool-streaming-2025-05-14" in headers["anthropic-beta"].split(",")


def test_a_model_stream_cut_midway_fails_the_run_and_stores_nothing_of_it(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    stack.fake.reply("This answer never gets to its end.", cut_after=4)
    lines = raw_stream(stack, agent.id, {"input": "tea?", "stream_tokens": True})
    got = events(lines)
    assert [e["content"] for e in got if e["message_type"] == "assistant_message"]
    assert got[-2] == {"message_type": "stop_reason", "stop_reason": "llm_api_error"}
    assert got[-1]["message_type"] == "error_message" and got[-1]["error_type"] == "llm_error"
    assert any(line == "event: error" for _, line in lines)
    assert lines[-1][1] == "data: [DONE]"
    stored = client.agents.messages.list(agent.id).items
    assert not [m for m in stored if m.message_type == "assistant_message"]
    run = client.runs.retrieve(got[-1]["run_id"])
    assert run.status == "failed"


def test_pings_while_the_model_thinks(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    stack.runtime.settings.stream_ping_seconds = 0.2
    stack.fake.reply("Done thinking.", delay=1.0)
    got = events(raw_stream(stack, agent.id, {"input": "think"}))
    pings = [e for e in got if e["message_type"] == "ping"]
    assert len(pings) >= 3 and all(p["id"].startswith("ping-") and p["run_id"] for p in pings)
    stack.fake.reply("Done thinking.", delay=1.0)
    quiet = events(raw_stream(stack, agent.id, {"input": "think", "include_pings": False}))
    assert "ping" not in [e["message_type"] for e in quiet]


def test_approvals_stream_as_in_letta(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(
        memory_blocks=[{"label": "human", "value": "Name: Ada"}], llm_config=GPT
    )  # type: ignore[arg-type]
    client.agents.tools.update_approval(
        "memory_insert", agent_id=agent.id, body_requires_approval=True
    )
    stack.fake.reply("", call("memory_insert", label="human", new_str="Likes: tea"))
    asked = events(raw_stream(stack, agent.id, {"input": "remember tea", "stream_tokens": True}))
    kinds = [e["message_type"] for e in asked]
    assert "tool_call_message" not in kinds
    requests = [e for e in asked if e["message_type"] == "approval_request_message"]
    assert requests and "".join(r["tool_call"]["arguments"] for r in requests) == json.dumps(
        {"label": "human", "new_str": "Likes: tea"}
    )
    assert asked[-2]["stop_reason"] == "requires_approval"
    call_id = requests[0]["tool_call"]["tool_call_id"]
    stack.fake.reply("Noted.")
    answer = {
        "messages": [
            {
                "type": "approval",
                "approvals": [{"type": "approval", "tool_call_id": call_id, "approve": True}],
            }
        ]
    }
    after = events(raw_stream(stack, agent.id, answer))
    kinds = [e["message_type"] for e in after]
    assert kinds == ["tool_return_message", "assistant_message", "stop_reason", "usage_statistics"]
    assert after[0]["status"] == "success" and after[-2]["stop_reason"] == "end_turn"


def test_a_client_that_leaves_midway_leaves_the_turn_to_finish_on_the_queue(
    stack: Stack,
) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    stack.fake.reply("", call("conversation_search", query="tea"))
    stack.fake.reply("", call("conversation_search", query="more tea"), delay=0.5)
    stack.fake.reply("All found.", delay=0.5)
    first = first_event_then_leave(stack, agent.id, {"input": "tea?"})
    run_id = first["run_id"]
    run = eventually(
        lambda: (r := client.runs.retrieve(run_id)).status in ("completed", "failed") and r,
        pause=0.1,
    )
    assert run.status == "completed" and run.stop_reason == "end_turn"
    said = client.runs.messages.list(run_id).items
    assert "All found." in [getattr(m, "content", None) for m in said]
    assert stack.fake.pending == 0


@pytest.mark.parametrize("streaming_flag", [True])
def test_messages_with_streaming_true_streams_the_same_way(
    stack: Stack, streaming_flag: bool
) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    stack.fake.reply("Hello!", chunk_delay=0.01)
    with httpx.Client(timeout=30) as http:
        answer = http.post(
            f"{stack.url}/v1/agents/{agent.id}/messages",
            headers={"Authorization": f"Bearer {stack.key}", "User-Agent": "letta-client/1.5.0"},
            json={"input": "hi", "streaming": streaming_flag, "stream_tokens": True},
        )
    got = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")]
    assert "".join(e.get("content") or "" for e in got) == "Hello!"
    assert answer.text.endswith("data: [DONE]\n\n")


def test_a_whole_reply_is_one_event_per_message_without_tokens(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    stack.fake.when(lambda r: True, Reply(text="One whole answer.", chunk_delay=0.01))
    got = events(raw_stream(stack, agent.id, {"input": "hi"}))
    said = [e for e in got if e["message_type"] == "assistant_message"]
    assert [e["content"] for e in said] == ["One whole answer."]


def test_letta_client_yields_the_first_token_long_before_the_turn_ends(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    text = "A slow model writes this answer four characters at a time."
    stack.fake.reply(text, chunk_delay=0.05)
    started = time.monotonic()
    arrived: list[tuple[float, Any]] = []
    for event in client.agents.messages.stream(agent.id, input="hi", stream_tokens=True):
        arrived.append((time.monotonic() - started, event))
    tokens = [(t, e) for t, e in arrived if e.message_type == "assistant_message"]
    assert "".join(e.content for _, e in tokens) == text
    end = arrived[-1][0]
    assert end - tokens[0][0] > 0.5  # the first words were on screen half a second early


def test_a_background_stream_left_midway_is_resumed_from_its_last_seq_id(stack: Stack) -> None:
    client = stack.client()
    agent = client.agents.create(llm_config=GPT)  # type: ignore[arg-type]
    stack.fake.reply("", call("conversation_search", query="tea"))
    stack.fake.reply("", call("conversation_search", query="more"), delay=0.6)
    stack.fake.reply("All found.", delay=0.6)
    first = first_event_then_leave(stack, agent.id, {"input": "tea?", "background": True})
    assert first["seq_id"] == 1
    rest = list(client.runs.messages.stream(first["run_id"], starting_after=first["seq_id"]))
    assert rest[0].seq_id == 2
    assert [e.message_type for e in rest][-2:] == ["stop_reason", "usage_statistics"]
    assert "All found." in [getattr(e, "content", None) for e in rest]
    # The whole replay is the live stream's events, numbered the same.
    whole = list(client.runs.messages.stream(first["run_id"]))
    assert [e.seq_id for e in whole] == list(range(1, len(whole) + 1))
    assert whole[0].id == first["id"] and whole[1:] == rest
