"""Gemini through Google's google-genai SDK, over HTTP to the fake server speaking the
Gemini API's wire form (generateContent, streamGenerateContent, batchEmbedContents)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import pytest

from cairn.config import Settings
from cairn.domain import Organization
from cairn.llm.catalog import resolve_embedding, resolve_model
from cairn.llm.clients import client_for
from cairn.llm.types import Delta, LLMError, LLMRequest
from cairn.store.db import Database
from tests.fakes.llm_server import FakeLLM, Reply, call
from tests.integration.engine_harness import engine_for, make_agent, on_model, send
from tests.integration.test_llm_providers import TOOL, history

MODEL = "gemini-2.5-flash"
SIGNATURE = base64.b64encode(b"opaque thought state").decode()


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def settings(fake: FakeLLM, **extra: object) -> Settings:
    values = {
        "gemini_api_key": "gm-test",
        "gemini_base_url": fake.base_url,
        "llm_max_retries": 2,
        "llm_timeout_seconds": 5,
        **extra,
    }
    return Settings(**values)  # type: ignore[arg-type]


def request(fake: FakeLLM, **config: object) -> LLMRequest:
    llm = resolve_model(f"google_ai/{MODEL}", settings(fake)).model_copy(update=config)
    return LLMRequest(config=llm, messages=history(), tools=[TOOL], tool_choice="required")


def test_system_instruction_user_and_model_turns_and_function_calls(fake: FakeLLM) -> None:
    fake.reply(
        "",
        call("lookup", q="tea"),
        call("lookup", q="milk"),
        reasoning="think",
        signature=SIGNATURE,
        usage=(120, 8),
    )
    req = request(fake, enable_reasoner=True, max_reasoning_tokens=2048)
    answer = client_for(req.config, settings(fake)).complete(req)
    assert [json.loads(c.function.arguments) for c in answer.tool_calls] == [
        {"q": "tea"},
        {"q": "milk"},
    ]  # parallel calls
    assert len({c.id for c in answer.tool_calls}) == 2  # Gemini gave none: Cairn's own
    assert answer.reasoning[0].reasoning == "think"
    assert answer.reasoning[0].signature is not None
    assert answer.finish_reason == "tool_calls"
    assert answer.usage.prompt_tokens == 120 and answer.usage.reasoning_tokens == 1

    sent = fake.requests[0]
    assert sent.provider == "gemini" and sent.path.endswith(f"/models/{MODEL}:generateContent")
    assert sent.headers.get("x-goog-api-key") == "gm-test"
    body = sent.body
    # No system role: the system text is the system instruction; turns are user and model.
    assert body["systemInstruction"]["parts"] == [{"text": "SYSTEM"}]
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    model_turn = body["contents"][1]["parts"]
    assert model_turn[0] == {"text": "let me look"}
    assert model_turn[1]["functionCall"] == {"name": "lookup", "args": {"q": "x"}, "id": "call_1"}
    response = body["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == "lookup" and response["id"] == "call_1"
    assert len(response["response"]["result"]) < 6000  # clipped as for every provider
    declaration = body["tools"][0]["functionDeclarations"][0]
    # The tool's JSON schema as is; the SDK sends this field's name in snake case, which
    # the API (proto3 JSON) reads as well as camel case.
    assert declaration["parameters_json_schema"] == TOOL["parameters"]
    assert body["toolConfig"]["functionCallingConfig"] == {"mode": "ANY"}
    thinking = body["generationConfig"]["thinkingConfig"]  # snake case inside, as above
    assert thinking == {"include_thoughts": True, "thinking_budget": 2048}


def test_a_thought_signature_goes_back_as_it_came(fake: FakeLLM) -> None:
    fake.reply("", call("lookup", q="tea"), reasoning="think", signature=SIGNATURE)
    req = request(fake)
    client = client_for(req.config, settings(fake))
    first = client.complete(req)
    from cairn.domain.messages import Message, TextContent, ToolReturn

    said = Message(
        organization_id=req.messages[0].organization_id,
        agent_id=req.messages[0].agent_id,
        role="assistant",
        content=[*first.reasoning],
        tool_calls=first.tool_calls,
    )
    call_id = first.tool_calls[0].id
    returned = ToolReturn(tool_call_id=call_id, status="success", func_response="found")
    result = Message(
        organization_id=said.organization_id,
        agent_id=said.agent_id,
        role="tool",
        content=[TextContent(text="found")],
        tool_call_id=call_id,
        tool_returns=[returned],
    )
    fake.reply("Tea it is.")
    again = req.model_copy(update={"messages": [*req.messages, said, result]})
    assert client.complete(again).text == "Tea it is."
    parts = fake.requests[1].body["contents"][-2]["parts"]
    call_part = next(p for p in parts if "functionCall" in p)
    assert call_part["thoughtSignature"] == SIGNATURE
    assert "id" not in call_part["functionCall"]  # Cairn's own id is not sent back
    assert not any(p.get("thought") for p in parts)  # thoughts themselves are not


def test_a_forced_tool_and_plain_text(fake: FakeLLM) -> None:
    fake.reply("plain answer")
    req = request(fake).model_copy(update={"tool_choice": "lookup"})
    answer = client_for(req.config, settings(fake)).complete(req)
    assert answer.text == "plain answer" and answer.finish_reason == "stop"
    assert answer.model == "gemini-fake-001"
    assert fake.requests[0].body["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY",
        "allowedFunctionNames": ["lookup"],
    }


def test_streamed_text_thoughts_and_calls_add_up(fake: FakeLLM) -> None:
    fake.reply("The tea is ready now.", call("lookup", q="biscuits"), reasoning="Tea first.")
    req = request(fake)
    got: list[Delta] = []
    answer = client_for(req.config, settings(fake)).complete(req, got.append)
    assert "".join(d.text for d in got if d.kind == "text") == answer.text
    assert answer.text == "The tea is ready now." and len([d for d in got if d.kind == "text"]) > 3
    assert "".join(d.text for d in got if d.kind == "reasoning") == "Tea first."
    (piece,) = [d for d in got if d.kind == "tool_call"]
    assert piece.name == "lookup" and json.loads(piece.text) == {"q": "biscuits"}
    assert piece.text == answer.tool_calls[0].function.arguments
    assert ":streamGenerateContent" in fake.requests[0].path
    assert answer.usage.total_tokens > 0


@pytest.mark.parametrize(
    ("status", "kind", "tries"),
    [
        (429, "rate_limit", 3),  # retried by the SDK (llm_max_retries=2), then given up
        (500, "server", 3),
        (403, "auth", 1),
        (400, "bad_request", 1),
    ],
)
def test_errors_are_retried_or_not_and_classified(
    fake: FakeLLM, status: int, kind: str, tries: int
) -> None:
    fake.fail(status, "no", times=3)
    req = request(fake)
    client = client_for(req.config, settings(fake, llm_max_retries=2))
    with pytest.raises(LLMError) as err:
        client.complete(req)
    assert err.value.kind == kind and err.value.status == status
    assert len(fake.requests) == tries


@pytest.mark.parametrize(
    ("body", "kind", "says"),
    [
        ('{"data": []}', "server", "no candidates"),  # a proxy's empty answer
        ('{"candidates": []}', "server", "no candidates"),
        ('{"promptFeedback": {"blockReason": "SAFETY"}}', "bad_request", "SAFETY"),
    ],
)
def test_an_answer_with_no_candidate_is_an_error_not_an_empty_turn(
    fake: FakeLLM, body: str, kind: str, says: str
) -> None:
    """It was an empty turn that completed the run with 0 tokens."""
    fake.when(lambda _: True, Reply(raw_body=body, raw_content_type="application/json"))
    req = request(fake)
    with pytest.raises(LLMError, match=says) as err:
        client_for(req.config, settings(fake, llm_max_retries=0)).complete(req)
    assert err.value.kind == kind


def test_no_key_is_a_clear_error() -> None:
    config = resolve_model(f"google_ai/{MODEL}", Settings())
    with pytest.raises(LLMError, match="GEMINI_API_KEY"):
        client_for(config, Settings())


def test_a_gemini_agent_runs_a_tool_turn(db: Database, org: Organization, fake: FakeLLM) -> None:
    config = resolve_model(f"google_ai/{MODEL}", settings(fake))
    agent = on_model(db, make_agent(db, org), config)
    fake.reply("", call("conversation_search", query="tea"))
    fake.reply("Nothing about tea yet.")
    turn = send(engine_for(db, fake), agent, "what about tea?")
    assert turn.run.status == "completed" and turn.roles[-1] == "assistant"
    assert all(r.provider == "gemini" for r in fake.requests) and len(fake.requests) == 2
    second = fake.requests[1].body
    assert {c["role"] for c in second["contents"]} == {"user", "model"}
    assert any("functionResponse" in p for c in second["contents"] for p in c["parts"])


def test_gemini_embeddings(fake: FakeLLM) -> None:
    from cairn.embeddings.providers import embedder_for

    config = resolve_embedding("google_ai/gemini-embedding-001", settings(fake))
    assert config.embedding_dim == 3072
    vectors = embedder_for(config, settings(fake)).embed(["tea at four", "a bike", "tea"])
    assert len(vectors) == 3 and {len(v) for v in vectors} == {3072}
    assert len(fake.embedding_requests) == 1  # one batch request
    close = sum(a * b for a, b in zip(vectors[0], vectors[2], strict=True))
    far = sum(a * b for a, b in zip(vectors[0], vectors[1], strict=True))
    assert close > far  # the vectors are the model's, in order
