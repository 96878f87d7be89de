"""Amazon Bedrock through boto3's Converse client, signed and sent over HTTP to the fake
server speaking Converse's wire form (nothing patched)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from cairn.adapters.aws import bedrock
from cairn.domain import Organization
from cairn.llm.catalog import resolve_model
from cairn.llm.clients import client_for
from cairn.llm.types import LLMError, LLMRequest
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, call
from tests.integration.engine_harness import engine_for, make_agent, on_model, send
from tests.integration.test_llm_providers import TOOL, history, settings

MODEL = "anthropic.claude-sonnet-4-20250514-v1:0"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLM]:
    # The function's role signs Bedrock calls; here any credentials sign them.
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(name, value)
    bedrock.install()  # as the runtime does when a process starts
    with FakeLLM() as server:
        yield server


def request(fake: FakeLLM, **config: object) -> LLMRequest:
    llm = resolve_model(f"bedrock/{MODEL}", settings(fake)).model_copy(
        update={"model_endpoint": fake.base_url, **config}
    )
    return LLMRequest(config=llm, messages=history(), tools=[TOOL], tool_choice="required")


def test_tool_calls_reasoning_usage_and_the_converse_request(fake: FakeLLM) -> None:
    fake.reply(
        "", call("lookup", q="tea"), call("lookup", q="milk"), reasoning="think", usage=(120, 8)
    )
    req = request(fake, enable_reasoner=True, max_reasoning_tokens=2048)
    answer = client_for(req.config, settings(fake)).complete(req)
    assert [json.loads(c.function.arguments) for c in answer.tool_calls] == [
        {"q": "tea"},
        {"q": "milk"},
    ]  # parallel calls
    assert answer.reasoning[0].reasoning == "think" and answer.reasoning[0].signature == "sig-5"
    assert answer.finish_reason == "tool_calls"
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (120, 8)

    sent = fake.requests[0]
    assert sent.path.startswith("/model/") and sent.path.endswith("/converse")
    assert MODEL.replace(":", "%3A") in sent.path or MODEL in sent.path
    signed = sent.headers.get("Authorization", "")
    assert signed.startswith("AWS4-HMAC-SHA256 Credential=") and "/bedrock/aws4_request" in signed
    body = sent.body
    assert body["system"] == [{"text": "SYSTEM"}]
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [{"text": "hi"}]}
    assert assistant["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "thought", "signature": "sig-7"}}
    }
    assert assistant["content"][2]["toolUse"]["input"] == {"q": "x"}
    result = results["content"][0]["toolResult"]
    assert result["toolUseId"] == "call_1" and len(result["content"][0]["text"]) < 6000
    assert body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"] == TOOL["parameters"]
    assert body["toolConfig"]["toolChoice"] == {"auto": {}}  # thinking allows only auto
    assert body["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 2048


def test_a_forced_tool_and_plain_text(fake: FakeLLM) -> None:
    fake.reply("plain answer")
    req = request(fake, enable_reasoner=False)  # as an agent made through the API has it
    answer = client_for(req.config, settings(fake)).complete(req)
    assert answer.text == "plain answer" and answer.finish_reason == "stop"
    assert fake.requests[0].body["toolConfig"]["toolChoice"] == {"any": {}}


def test_throttling_is_retried_and_denied_access_fails_with_the_reason(fake: FakeLLM) -> None:
    fake.fail(429).fail(503).reply("third time lucky")
    req = request(fake)
    assert client_for(req.config, settings(fake)).complete(req).text == "third time lucky"
    assert len(fake.requests) == 3
    fake.fail(403, "not authorized to invoke this model", times=3)
    with pytest.raises(LLMError) as denied:
        client_for(req.config, settings(fake)).complete(req)
    assert denied.value.kind == "auth" and not denied.value.transient
    assert "AccessDeniedException" in str(denied.value)
    assert len(fake.requests) == 4  # access denied is not retried
    fake.clear()
    fake.fail(429, times=5)
    with pytest.raises(LLMError) as throttled:
        client_for(req.config, settings(fake)).complete(req)
    assert throttled.value.kind == "rate_limit" and throttled.value.transient


def test_a_bedrock_agent_runs_a_tool_turn(db: Database, org: Organization, fake: FakeLLM) -> None:
    config = resolve_model(f"bedrock/{MODEL}", settings(fake)).model_copy(
        update={"model_endpoint": fake.base_url}
    )
    agent = on_model(db, make_agent(db, org), config)
    fake.reply("", call("conversation_search", query="tea"))
    fake.reply("Nothing about tea yet.")
    turn = send(engine_for(db, fake), agent, "what about tea?")
    assert turn.run.status == "completed" and turn.roles[-1] == "assistant"
    assert all(r.provider == "bedrock" for r in fake.requests) and len(fake.requests) == 2
    second = fake.requests[1].body["messages"]
    assert any("toolResult" in block for m in second for block in m["content"])


@pytest.mark.parametrize(
    ("model", "requests"),
    [
        ("amazon.titan-embed-text-v2:0", 3),  # one text a request
        ("cohere.embed-english-v3", 1),  # all three in one
    ],
)
def test_bedrock_embeddings(fake: FakeLLM, model: str, requests: int) -> None:
    from cairn.embeddings.providers import embedder_for
    from cairn.llm.catalog import resolve_embedding

    config = resolve_embedding(f"bedrock/{model}", settings(fake)).model_copy(
        update={"embedding_endpoint": fake.base_url}
    )
    vectors = embedder_for(config, settings(fake)).embed(["tea at four", "a bike", "tea"])
    assert len(vectors) == 3 and {len(v) for v in vectors} == {1024}
    assert len(fake.embedding_requests) == requests
    assert all(
        model.replace(":", "%3A") in r["path"] or model in r["path"]
        for r in fake.embedding_requests
    )
    close = sum(a * b for a, b in zip(vectors[0], vectors[2], strict=True))
    far = sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True))
    assert close > far  # the vectors are the model's, in order
    # what an organization is billed: Titan says how many tokens it read (the fake counts
    # words); Cohere says nothing here, so they are estimated (four characters a token)
    embedder = embedder_for(config, settings(fake))
    _, tokens = embedder.embed_counted(["refreshments", "a b c d"])  # type: ignore[attr-defined]
    assert tokens == (1 + 4 if model.startswith("amazon.") else (12 // 4 + 1) + (7 // 4 + 1))


def test_under_a_sync_sends_deadline_a_slow_model_hands_the_step_back_in_time(
    fake: FakeLLM,
) -> None:
    """botocore takes no per-call timeout: under a deadline the call goes through a client
    whose read timeout is the time left, and running out is the caller's DeadlineReached
    (the step goes to the queue), not a provider failure."""
    import time

    from cairn.llm import deadline

    fake.reply("slow", delay=3.0)
    req = request(fake)
    client = client_for(req.config, settings(fake))
    started = time.monotonic()
    with deadline.within(1.5), pytest.raises(deadline.DeadlineReached):
        client.complete(req)
    assert time.monotonic() - started < 2.8 and len(fake.requests) == 1  # no retry
    fake.reply("in time", delay=0.2)
    assert client.complete(req).text == "in time"  # without a deadline: the usual client


def test_a_cross_region_inference_profile_id_is_called_as_the_model(fake: FakeLLM) -> None:
    profile = "us.anthropic.claude-sonnet-4-20250514-v1:0"
    llm = resolve_model(f"bedrock/{profile}", settings(fake)).model_copy(
        update={"model_endpoint": fake.base_url}
    )
    fake.reply("routed")
    req = LLMRequest(config=llm, messages=history())
    assert client_for(llm, settings(fake)).complete(req).text == "routed"
    assert profile.replace(":", "%3A") in fake.requests[0].path or profile in fake.requests[0].path


def test_converse_stream_pieces_add_up_to_the_answer(fake: FakeLLM) -> None:
    """ConverseStream: boto3 decodes AWS's binary event stream from the fake; text,
    reasoning and tool input arrive in pieces and assemble into what `converse` returns."""
    from cairn.llm.types import Delta

    fake.reply(
        "Tea is on its way.",
        call("lookup", q="green tea"),
        reasoning="Tea first.",
        chunk_delay=0.01,
    )
    req = request(fake)
    got: list[Delta] = []
    answer = client_for(req.config, settings(fake)).complete(req, got.append)
    assert fake.requests[0].path.endswith("/converse-stream")
    assert "".join(d.text for d in got if d.kind == "text") == answer.text == "Tea is on its way."
    assert "".join(d.text for d in got if d.kind == "reasoning") == "Tea first."
    assert answer.reasoning[0].signature == "sig-10"  # kept for the next tool turn
    calls = [d for d in got if d.kind == "tool_call"]
    assert len(calls) > 2 and {d.name for d in calls} == {"lookup"}
    assert json.loads("".join(d.text for d in calls)) == {"q": "green tea"}
    assert answer.tool_calls[0].function.arguments == "".join(d.text for d in calls)
    assert answer.finish_reason == "tool_calls" and answer.usage.total_tokens > 0


def test_a_converse_stream_cut_midway_is_a_provider_failure(fake: FakeLLM) -> None:
    fake.reply("This answer never ends.", cut_after=4)
    req = request(fake)
    with pytest.raises(LLMError):
        client_for(req.config, settings(fake)).complete(req, lambda d: None)
