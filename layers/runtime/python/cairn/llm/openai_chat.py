"""OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from cairn.domain.messages import FunctionCall, ReasoningContent, ToolCall
from cairn.llm import deadline
from cairn.llm.errors import json_object, translate_errors
from cairn.llm.transcript import turns
from cairn.llm.types import FinishReason, LLMError, LLMRequest, LLMResponse, LLMUsage

if TYPE_CHECKING:
    import openai

# Reasoning models take max_completion_tokens and an effort, and refuse a temperature.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_FINISH: dict[str, FinishReason] = {
    "stop": "stop", "tool_calls": "tool_calls", "function_call": "tool_calls",
    "length": "length", "content_filter": "content_filter",
}  # fmt: skip


class OpenAIChat:
    def __init__(self, client: openai.OpenAI) -> None:
        self._client = client

    def complete(self, request: LLMRequest) -> LLMResponse:
        # The body is already in wire form; the typed `create` would walk it again to
        # transform its params (6-7 ms for a 7-tool request, measured in bench/), so it goes
        # through the SDK's own request method: same retries, auth, timeouts and errors.
        body = request_body(request)
        for attempt in range(self._client.max_retries + 1):
            with translate_errors():
                answer = self._client.post(  # type: ignore[call-overload]
                    "/chat/completions", body=body, cast_to=object,
                    options=deadline.request_options(),
                )  # fmt: skip
            completion = json_object(answer)
            if completion.get("choices"):
                return parse(completion)
            # A 200 with no choices (seen from proxies and overloaded compatible servers)
            # is the provider failing: asked again, as the SDK retries a 5xx.
            if attempt < self._client.max_retries and not deadline.passed():
                time.sleep(min(8.0, 0.5 * 2**attempt))
        raise LLMError("server", f"The model answered with no choices: {json.dumps(answer)[:500]}")


def _messages(request: LLMRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in turns(request.messages):
        if turn.role == "tool":
            out.append({"role": "tool", "tool_call_id": turn.tool_call_id, "content": turn.text})
        elif turn.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if turn.tool_calls:
                message["tool_calls"] = [c.model_dump() for c in turn.tool_calls]
            out.append(message)
        else:
            out.append({"role": turn.role, "content": turn.text})
    return out


def request_body(request: LLMRequest) -> dict[str, Any]:
    config = request.config
    body: dict[str, Any] = {"model": config.model, "messages": _messages(request)}
    reasoning = config.reasoning_effort is not None or config.model.startswith(_REASONING_PREFIXES)
    if config.max_tokens:
        body["max_completion_tokens" if reasoning else "max_tokens"] = config.max_tokens
    if reasoning and config.reasoning_effort:
        body["reasoning_effort"] = config.reasoning_effort
    elif config.temperature is not None and not reasoning:
        body["temperature"] = config.temperature
    if request.tools:
        body["tools"] = [{"type": "function", "function": t} for t in request.tools]
        choice = request.tool_choice
        body["tool_choice"] = (
            choice if choice in ("auto", "required", "none")
            else {"type": "function", "function": {"name": choice}}
        )  # fmt: skip
        body["parallel_tool_calls"] = config.parallel_tool_calls
    return body


def parse(completion: dict[str, Any]) -> LLMResponse:
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    calls = [
        ToolCall(
            id=c["id"],
            function=FunctionCall(
                name=c["function"]["name"], arguments=c["function"].get("arguments") or "{}"
            ),
        )
        for c in message.get("tool_calls") or ()
        if c.get("type", "function") == "function"
    ]
    # OpenAI-compatible servers (vLLM, Ollama) return the reasoning of thinking models here.
    reasoning_text = message.get("reasoning_content") or message.get("reasoning")
    usage = completion.get("usage") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return LLMResponse(
        text=message.get("content") or "",
        reasoning=[ReasoningContent(reasoning=reasoning_text, is_native=True)]
        if isinstance(reasoning_text, str) and reasoning_text
        else [],
        tool_calls=calls,
        usage=LLMUsage(
            prompt_tokens=usage.get("prompt_tokens") or 0,
            completion_tokens=usage.get("completion_tokens") or 0,
            total_tokens=usage.get("total_tokens") or 0,
            cached_input_tokens=prompt_details.get("cached_tokens") or 0,
            reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
        ),
        finish_reason=_FINISH.get(choice.get("finish_reason") or "", "other"),
        model=completion.get("model"),
    )
