"""Letta's OpenAI-compatible door through the unchanged `openai` SDK: an agent is the model;
its answer comes whole or streamed as ChatCompletionChunks; its memory edits persist; what
Letta refuses is refused with its words."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.api import test_images
from tests.api.conftest import Stack
from tests.fakes.llm_server import call
from tests.integration.test_images import PNG

LLM = {"model": "gpt-test", "model_endpoint_type": "openai", "context_window": 32000}


def door(stack: Stack) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{stack.url}/v1", api_key=stack.key, max_retries=0)


def agent_of(stack: Stack) -> str:
    made = stack.client().agents.create(
        llm_config=LLM,
        memory_blocks=[{"label": "human", "value": "Unknown."}],  # type: ignore[arg-type]
    )
    return made.id


def test_an_agent_answers_as_a_model_and_its_memory_edit_persists(stack: Stack) -> None:
    agent = agent_of(stack)
    stack.fake.reply("", call("memory_insert", label="human", new_str="Name: Ada"))
    stack.fake.reply("Nice to meet you, Ada.")
    answer = door(stack).chat.completions.create(
        model=agent,
        messages=[
            {"role": "system", "content": "ignored: the agent keeps its own"},
            {"role": "user", "content": "earlier turn, already in the agent's memory"},
            {"role": "assistant", "content": "..."},
            {"role": "user", "content": "I am Ada."},
        ],
    )
    assert answer.choices[0].message.content == "Nice to meet you, Ada."
    assert answer.choices[0].finish_reason == "stop" and answer.model == "gpt-test"
    assert answer.id.startswith("chatcmpl-run-") and answer.usage and answer.usage.total_tokens
    # Only the last user message reached the agent (Letta keeps the conversation itself).
    assert stack.fake.requests[0].last_text().endswith("I am Ada.")
    human = stack.client().agents.blocks.retrieve("human", agent_id=agent)
    assert "Name: Ada" in human.value


def test_a_streamed_answer_comes_in_chunks_then_stops(stack: Stack) -> None:
    agent = agent_of(stack)
    stack.fake.reply("The trail goes north.")
    asked = [{"role": "user", "content": "Which way?"}]
    chunks = list(door(stack).chat.completions.create(model=agent, messages=asked, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "The trail goes north."
    assert chunks[0].choices[0].delta.role == "assistant" and len(chunks) > 3  # pieces
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1 and chunks[0].object == "chat.completion.chunk"


def test_what_letta_refuses_is_refused_with_its_words(stack: Stack) -> None:
    client = door(stack)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert "should contain an agent ID" in str(refused.value.body)  # Letta's {"detail": ...}
    agent = agent_of(stack)
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model=agent, messages=[{"role": "system", "content": "x"}])
    assert "No user message found" in str(refused.value.body)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="agent-00000000-0000-4000-8000-000000000000",
            messages=[{"role": "user", "content": "x"}],
        )
    nobody = httpx.post(
        f"{stack.url}/v1/chat/completions",
        json={"model": agent, "messages": [{"role": "user", "content": "x"}]},
    )
    assert nobody.status_code == 401  # the API key is required here too


@pytest.fixture
def site() -> Iterator[str]:
    yield from test_images.site.__wrapped__()  # type: ignore[attr-defined]


def test_openai_content_parts_reach_the_agent_in_order_images_included(
    stack: Stack, site: str
) -> None:
    """What Open WebUI and LibreChat send: text and `image_url` parts, the image as a data:
    URL or a link (fetched once, as Letta's image URLs are); once a 500."""
    agent = agent_of(stack)
    data = base64.b64encode(PNG).decode()
    for url in (f"data:image/png;base64,{data}", f"{site}/pixel.png"):
        stack.fake.reply("A single pixel.")
        answer = door(stack).chat.completions.create(
            model=agent,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image_url", "image_url": {"url": url}},
                    ],
                }
            ],
        )  # type: ignore[list-item]
        assert answer.choices[0].message.content == "A single pixel."
        assert test_images.sent_image(stack) == PNG
        assert stack.fake.requests[-1].last_text().endswith("What is this?")


@pytest.mark.parametrize(
    ("content", "field"),
    [
        (123, "messages[0].content"),
        ({"text": "x"}, "messages[0].content"),
        ([], "messages[0].content"),
        ([{"type": "text"}], "messages[0].content[0].text"),
        ([{"type": "input_audio", "input_audio": {}}], "messages[0].content[0]"),
        (["just text"], "messages[0].content[0]"),
        ([{"type": "image_url", "image_url": {}}], "messages[0].content[0].image_url.url"),
        (
            [{"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}],
            "messages[0].content[0].image_url.url",
        ),
        (
            [{"type": "image_url", "image_url": {"url": "data:text/html;base64,PHA+"}}],
            "messages[0].content[0].image_url.url",
        ),
        ("x" * 2_000_001, "messages[0].content"),
    ],
)
def test_content_openai_does_not_define_is_a_400_naming_the_part(
    stack: Stack, content: object, field: str
) -> None:
    agent = agent_of(stack)
    sent = httpx.post(
        f"{stack.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {stack.key}"},
        json={"model": agent, "messages": [{"role": "user", "content": content}]},
        timeout=30,
    )
    assert sent.status_code == 400, sent.text
    assert sent.json()["detail"].startswith(f"{field}:"), sent.text
    assert stack.fake.requests == []
    assert stack.client().runs.list(agent_id=agent).items == []  # type: ignore[attr-defined]


def test_include_usage_ends_the_stream_with_a_usage_chunk(stack: Stack) -> None:
    agent = agent_of(stack)
    stack.fake.reply("Counted.")
    chunks = list(
        door(stack).chat.completions.create(
            model=agent,
            messages=[{"role": "user", "content": "Count me."}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None and last.usage.total_tokens > 0
    assert last.usage.total_tokens == last.usage.prompt_tokens + last.usage.completion_tokens
    assert chunks[-2].choices[0].finish_reason == "stop"
    without = list(
        door(stack).chat.completions.create(
            model=agent, messages=[{"role": "user", "content": "Again."}], stream=True
        )
    )
    assert all(c.usage is None for c in without)


def test_the_deprecated_voice_door_answers_410_as_letta_s_does(stack: Stack) -> None:
    path = f"{stack.url}/v1/voice-beta/agent-00000000-0000-4000-8000-000000000000/chat/completions"
    auth = {"Authorization": f"Bearer {stack.key}"}
    before = len(stack.fake.requests)
    gone = httpx.post(path, json={"model": "x", "messages": [], "vapi": {"extra": 1}}, headers=auth)
    assert gone.status_code == 410
    assert gone.json() == {
        "detail": "The /voice-beta endpoint has been deprecated and is no longer available."
    }
    assert httpx.post(path, json=[1], headers=auth).status_code == 422  # an object, as Letta's
    assert httpx.post(path, json={}).status_code == 401  # a key, as every route
    assert len(stack.fake.requests) == before
