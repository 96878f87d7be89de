"""Provider clients on the real SDKs, over HTTP, against the fake LLM server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from cairn.config import Settings
from cairn.domain import LLMConfig
from cairn.domain.ids import new_id
from cairn.domain.messages import (
    FunctionCall,
    Message,
    ReasoningContent,
    TextContent,
    ToolCall,
    ToolReturn,
)
from cairn.llm.clients import client_for
from cairn.llm.types import LLMError, LLMRequest
from tests.fakes.llm_server import FakeLLM, call

ORG, AGENT = new_id("org"), new_id("agent")
TOOL = {
    "name": "lookup",
    "description": "Look something up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


def settings(fake: FakeLLM, **extra: object) -> Settings:
    return Settings(
        openai_api_key="sk-test",
        openai_base_url=f"{fake.base_url}/v1",
        anthropic_api_key="ant-test",
        anthropic_base_url=fake.base_url,
        bedrock_base_url=fake.base_url,
        llm_max_retries=2,
        llm_timeout_seconds=5,
        **extra,  # type: ignore[arg-type]
    )


def msg(role: str, text: str = "", **fields: object) -> Message:
    fields.setdefault("content", [TextContent(text=text)] if text else [])
    return Message(organization_id=ORG, agent_id=AGENT, role=role, **fields)  # type: ignore[arg-type]


def history() -> list[Message]:
    tool_call = ToolCall(id="call_1", function=FunctionCall(name="lookup", arguments='{"q": "x"}'))
    return [
        msg("system", "SYSTEM"),
        msg("user", "hi"),
        msg(
            "assistant",
            tool_calls=[tool_call],
            content=[
                ReasoningContent(reasoning="thought", is_native=True, signature="sig-7"),
                TextContent(text="let me look"),
            ],
        ),
        msg(
            "tool",
            tool_call_id="call_1",
            tool_returns=[
                ToolReturn(tool_call_id="call_1", status="success", func_response="r" * 6000)
            ],
        ),
    ]


def request(endpoint: str = "openai", **config: object) -> LLMRequest:
    return LLMRequest(
        config=LLMConfig(
            model=config.pop("model", "gpt-4.1"),
            model_endpoint_type=endpoint,  # type: ignore[arg-type]
            **config,
        ),  # type: ignore[arg-type]
        messages=history(),
        tools=[TOOL],
        tool_choice="required",
    )


def test_openai_tool_calls_and_request_shape(fake: FakeLLM) -> None:
    fake.reply("", call("lookup", q="tea"), usage=(120, 8))
    response = client_for(request().config, settings(fake)).complete(request())
    assert [c.function.name for c in response.tool_calls] == ["lookup"]
    assert json.loads(response.tool_calls[0].function.arguments) == {"q": "tea"}
    assert response.finish_reason == "tool_calls" and response.usage.total_tokens == 128
    body = fake.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is False
    # Strict, as Letta 0.16.1's OpenAI client sends every tool (convert_to_structured_output).
    strict = {**TOOL, "strict": True}
    strict["parameters"] = {**TOOL["parameters"], "additionalProperties": False}
    assert body["tools"][0] == {"type": "function", "function": strict}
    # returns are cut per request, the stored one stays whole
    assert len(body["messages"][3]["content"]) < 5100
    assert {k.lower(): v for k, v in fake.requests[0].headers.items()}[
        "authorization"
    ] == "Bearer sk-test"


def test_a_window_message_is_made_into_wire_form_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same Message objects, step after step (a window held parsed), are each made into
    OpenAI's wire form once; a request with the thoughts in the calls' arguments gets its
    own form; a message that is gone takes its form with it."""
    import gc

    from cairn.llm import openai_chat

    made: list[str] = []
    entries = openai_chat.entries

    def counted(messages: list[Message]) -> object:
        made.extend(m.role for m in messages)
        return entries(messages)

    monkeypatch.setattr(openai_chat, "entries", counted)
    window = history()
    ask = request()
    ask.messages = window
    first = openai_chat.request_body(ask)
    assert made == ["system", "user", "assistant", "tool"]
    again = openai_chat.request_body(ask)
    assert again["messages"] == first["messages"] and len(made) == 4  # none made again
    ask.messages = [*window, msg("user", "and now?")]
    grown = openai_chat.request_body(ask)
    assert grown["messages"][:4] == first["messages"] and made[4:] == ["user"]
    thinking = request(put_inner_thoughts_in_kwargs=True)
    thinking.messages = window
    in_kwargs = openai_chat.request_body(thinking)["messages"][2]
    assert in_kwargs["content"] is None  # the thoughts moved into the call
    assert json.loads(in_kwargs["tool_calls"][0]["function"]["arguments"])["thinking"]
    kept = len(openai_chat._WIRE)
    del window, ask, thinking, first, again, grown, in_kwargs
    gc.collect()
    assert len(openai_chat._WIRE) <= kept - 5


def test_openai_reasoning_model_gets_effort_and_completion_tokens(fake: FakeLLM) -> None:
    fake.reply("done", reasoning="because")
    req = request(model="o4-mini", reasoning_effort="high", max_tokens=500, temperature=0.5)
    response = client_for(req.config, settings(fake)).complete(req)
    body = fake.requests[0].body
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 500
    # Letta sends 1.0, the one temperature a reasoning model takes (supports_temperature_param).
    assert body["temperature"] == 1.0 and "max_tokens" not in body
    assert response.text == "done" and response.reasoning[0].reasoning == "because"


def test_openai_compatible_server_by_base_url_needs_no_key_and_gets_none(fake: FakeLLM) -> None:
    fake.reply("hello from ollama")
    req = request("ollama", model="llama3.2", model_endpoint=f"{fake.base_url}/v1")
    # The operator opens loopback to the organization's server; the server's key stays home.
    own = Settings(openai_api_key="sk-server-secret", outbound_networks="127.0.0.0/8")
    response = client_for(req.config, own).complete(req)
    assert response.text == "hello from ollama" and fake.requests[0].body["model"] == "llama3.2"
    assert "sk-server-secret" not in json.dumps(fake.requests[0].headers)


def test_anthropic_system_blocks_thinking_signature_and_tool_choice(fake: FakeLLM) -> None:
    fake.reply("", call("lookup", q="tea"), reasoning="I should look", usage=(50, 5))
    req = request("anthropic", model="claude-fake-1")
    response = client_for(req.config, settings(fake)).complete(req)
    body = fake.requests[0].body
    assert body["system"] == [
        {"type": "text", "text": "SYSTEM", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tool_choice"]["type"] == "any"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "thought", "signature": "sig-7"}
    assert assistant[2] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "lookup",
        "input": {"q": "x"},
    }
    assert body["messages"][2]["content"][0]["type"] == "tool_result"
    assert body["tools"][0]["input_schema"] == TOOL["parameters"]
    assert response.reasoning[0].signature == "sig-13"  # kept for the next request
    assert response.tool_calls[0].id.startswith("toolu_") and response.usage.prompt_tokens == 50


def test_anthropic_prompt_caching_marks_the_stable_prefixes_and_counts_what_it_saved(
    fake: FakeLLM,
) -> None:
    fake.reply("ok", usage=(40, 5), cache=(9000, 300))
    req = request("anthropic", model="claude-fake-1")
    usage = client_for(req.config, settings(fake)).complete(req).usage
    body = fake.requests[0].body
    marked = [
        ("system", body["system"][-1]),
        ("tools", body["tools"][-1]),
        ("history", body["messages"][-1]["content"][-1]),
    ]
    assert all(block.get("cache_control") == {"type": "ephemeral"} for _, block in marked)
    assert json.dumps(body).count("cache_control") == 3  # Anthropic allows four marks
    assert (usage.cached_input_tokens, usage.cache_write_tokens) == (9000, 300)
    assert usage.prompt_tokens == 40 + 9000 + 300  # every input token, however billed


def test_anthropic_extended_thinking_allows_only_auto_tool_choice(fake: FakeLLM) -> None:
    fake.reply("ok")
    req = request(
        "anthropic", model="claude-sonnet-4-5", enable_reasoner=True, max_reasoning_tokens=2000
    )
    client_for(req.config, settings(fake)).complete(req)
    body = fake.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert body["tool_choice"]["type"] == "auto" and body["max_tokens"] > 2000
    # A model Letta does not ask to think is asked without, whatever the config says.
    fake.reply("ok")
    req = request("anthropic", model="claude-fake-1", enable_reasoner=True)
    client_for(req.config, settings(fake)).complete(req)
    assert "thinking" not in fake.requests[1].body


@pytest.mark.parametrize("endpoint", ["openai", "anthropic"])
def test_server_errors_are_retried_with_backoff(fake: FakeLLM, endpoint: str) -> None:
    fake.fail(500).fail(429).reply("third time lucky")
    req = request(endpoint)
    assert client_for(req.config, settings(fake)).complete(req).text == "third time lucky"
    assert len(fake.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind", "transient"),
    [
        (401, "auth", False),
        (400, "bad_request", False),
        (503, "server", True),
    ],
)
def test_errors_are_classified(fake: FakeLLM, status: int, kind: str, transient: bool) -> None:
    fake.fail(status, times=3)
    req = request()
    with pytest.raises(LLMError) as err:
        client_for(req.config, settings(fake)).complete(req)
    assert err.value.kind == kind and err.value.transient is transient


@pytest.mark.parametrize("endpoint", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        ("<html>bad gateway</html>", "text/html"),
        ("[1, 2]", "application/json"),
        ("{not json", "application/json"),
    ],
)
def test_an_answer_that_is_no_json_object_is_a_server_error(
    fake: FakeLLM, body: str, content_type: str, endpoint: str
) -> None:
    fake.reply(raw_body=body, raw_content_type=content_type)
    req = request(endpoint)
    with pytest.raises(LLMError) as err:
        client_for(req.config, settings(fake)).complete(req)
    assert err.value.kind == "server" and err.value.transient


def test_an_anthropic_answer_that_is_no_message_is_a_server_error(fake: FakeLLM) -> None:
    """A 200 holding no message (`{"data": []}` from a proxy) was an empty turn that
    completed the run with 0 tokens; it is the provider failing, as OpenAI's no choices."""
    fake.reply(raw_body='{"data": []}', raw_content_type="application/json")
    req = request("anthropic", model="claude-sonnet-4-5")
    with pytest.raises(LLMError, match="no message") as err:
        client_for(req.config, settings(fake)).complete(req)
    assert err.value.kind == "server" and err.value.transient


def test_timeouts_are_configurable_and_transient(fake: FakeLLM) -> None:
    fake.reply("slow", delay=1.0)
    req = request()
    quick = settings(fake).model_copy(update={"llm_timeout_seconds": 0.2, "llm_max_retries": 0})
    with pytest.raises(LLMError) as err:
        client_for(req.config, quick).complete(req)
    assert err.value.kind == "timeout" and err.value.transient


def test_fake_server_streams_when_the_sdk_asks(fake: FakeLLM) -> None:
    import anthropic
    import openai

    fake.reply("streamed", call("lookup", q="a")).reply("", reasoning="hmm")
    oai = openai.OpenAI(api_key="k", base_url=f"{fake.base_url}/v1")
    question = [{"role": "user", "content": "x"}]
    chunks = list(oai.chat.completions.create(model="m", messages=question, stream=True))  # type: ignore[arg-type]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed"
    ant = anthropic.Anthropic(api_key="k", base_url=fake.base_url)
    with ant.messages.stream(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].type == "thinking" and final.content[0].signature == "sig-3"
    assert all(r.body.get("stream") for r in fake.requests)


def test_provider_sdks_are_not_imported_until_a_call_needs_them() -> None:
    code = (
        "import sys; import cairn.llm.clients, cairn.llm.openai_chat, cairn.llm.anthropic_messages;"
        "import cairn.tools.registry, cairn.memory.render;"
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
