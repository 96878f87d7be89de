"""Amazon Bedrock through the Converse API (boto3 `bedrock-runtime`): one request shape for
every model Bedrock serves, tools as `toolSpec`, results as `toolResult` blocks, reasoning
as `reasoningContent`. No key: the function's IAM role signs the call."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cairn.domain.messages import FunctionCall, ReasoningContent, ToolCall
from cairn.llm import deadline
from cairn.llm.anthropic_messages import thinks
from cairn.llm.transcript import call_arguments, entries, merged
from cairn.llm.types import (
    Delta,
    ErrorKind,
    FinishReason,
    LLMError,
    LLMRequest,
    LLMResponse,
    LLMUsage,
    OnDelta,
)

DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
_USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
# Bedrock's error codes (botocore puts them in `Error.Code`); throttling and the 5xx kinds
# are retried by botocore first, then by a later delivery of the step.
_ERRORS: dict[str, ErrorKind] = {
    "ThrottlingException": "rate_limit",
    "ServiceQuotaExceededException": "rate_limit",
    "AccessDeniedException": "auth",
    "UnrecognizedClientException": "auth",
    "ExpiredTokenException": "auth",
    "ResourceNotFoundException": "bad_request",
    "ValidationException": "bad_request",
    "ModelErrorException": "server",
    "ModelTimeoutException": "timeout",
    "ModelNotReadyException": "server",
    "InternalServerException": "server",
    "ServiceUnavailableException": "server",
}


class BedrockConverse:
    def __init__(self, client: Any, under_deadline: Callable[[float], Any]) -> None:
        # boto3's bedrock-runtime client, and how to get one that answers within n seconds
        self._client, self._under_deadline = client, under_deadline

    def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        if on_delta is not None:
            return self._streamed(request, on_delta)
        with bedrock_errors():
            answer = self._client_now().converse(**request_body(request))
        return parse(answer)

    def _streamed(self, request: LLMRequest, on_delta: OnDelta) -> LLMResponse:
        """ConverseStream: each delta handed on as it arrives, and the events assembled into
        the answer `converse` returns (`parse` reads it)."""
        assembled = Assembled()
        with bedrock_errors():
            answer = self._client_now().converse_stream(**request_body(request))
            for event in answer["stream"]:
                delta = assembled.add(event)
                if delta is not None:
                    on_delta(delta)
        if assembled.stop is None:
            raise LLMError("connection", "The model's stream ended before its answer did")
        return parse(assembled.answer())

    def _client_now(self) -> Any:
        """Under a deadline (a sync send), botocore takes no per-call timeout: a client
        whose read timeout is the time left, whole seconds down, and no retries."""
        if deadline.request_options() == {}:
            return self._client
        left = deadline.seconds_left() or 0.0
        return self._under_deadline(max(1.0, float(int(left))))


class Assembled:
    """ConverseStream's events put back together into one Converse answer."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.raw: dict[int, list[str]] = {}  # each toolUse's input JSON, as sent
        self.stop: str | None = None
        self.usage: dict[str, Any] = {}

    def add(self, event: dict[str, Any]) -> Delta | None:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = (start.get("start") or {}).get("toolUse")
            if use is not None:
                self.blocks[start["contentBlockIndex"]] = {"toolUse": dict(use)}
        elif "contentBlockDelta" in event:
            return self._delta(event["contentBlockDelta"])
        elif "contentBlockStop" in event:
            index = event["contentBlockStop"]["contentBlockIndex"]
            block = self.blocks.get(index, {})
            if "toolUse" in block:
                raw = "".join(self.raw.pop(index, []))
                block["toolUse"]["input"] = json.loads(raw) if raw else {}
                # The call's arguments as streamed, so the pieces a client got add up to them.
                block["toolUse"]["arguments"] = raw or "{}"
        elif "messageStop" in event:
            self.stop = event["messageStop"].get("stopReason") or "end_turn"
        elif "metadata" in event:
            self.usage = event["metadata"].get("usage") or {}
        return None

    def _delta(self, delta_event: dict[str, Any]) -> Delta | None:
        index, delta = delta_event["contentBlockIndex"], delta_event.get("delta") or {}
        if "text" in delta:
            block = self.blocks.setdefault(index, {"text": ""})
            block["text"] += delta["text"]
            return Delta("text", delta["text"])
        if "reasoningContent" in delta:
            said = self.blocks.setdefault(
                index, {"reasoningContent": {"reasoningText": {"text": "", "signature": None}}}
            )["reasoningContent"]["reasoningText"]
            part = delta["reasoningContent"]
            if "signature" in part:
                said["signature"] = part["signature"]
                return None
            said["text"] += part.get("text", "")
            return Delta("reasoning", part.get("text", ""))
        if "toolUse" in delta:
            piece = delta["toolUse"].get("input", "")
            self.raw.setdefault(index, []).append(piece)
            use = self.blocks.get(index, {}).get("toolUse", {})
            return (
                Delta("tool_call", piece, use.get("toolUseId"), use.get("name")) if piece else None
            )
        return None

    def answer(self) -> dict[str, Any]:
        content = [self.blocks[i] for i in sorted(self.blocks)]
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": self.stop,
            "usage": self.usage,
        }


@contextmanager
def bedrock_errors() -> Iterator[None]:
    """botocore's exceptions as one LLMError (after botocore's own retries), told apart by
    their class names, so this module needs no botocore import (boto3 stays in
    the AWS adapters)."""
    try:
        yield
    except LLMError:
        raise
    except Exception as err:
        names = {cls.__name__ for cls in type(err).__mro__}
        if "ClientError" in names:
            response = getattr(err, "response", {}) or {}
            code = response.get("Error", {}).get("Code", "")
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            kind = _ERRORS.get(code) or ("server" if (status or 500) >= 500 else "bad_request")
            raise LLMError(kind, f"{code}: {err}", status=status) from err
        if names & {"ReadTimeoutError", "ConnectTimeoutError"}:
            if (ran_out := deadline.timed_out()) is not None:
                # The read timeout was the time left (whole seconds down): the caller's (the
                # step goes to the queue, which calls with the full timeout) or the call's own.
                raise ran_out from err
            raise LLMError("timeout", f"{type(err).__name__}: {err}") from err
        if names & {"ProtocolError", "ResponseStreamingError", "IncompleteRead"}:
            # A stream that broke off midway (ConverseStream): the provider's failure.
            raise LLMError("connection", f"{type(err).__name__}: {err}") from err
        if "BotoCoreError" in names:  # no route, no credentials, a broken answer
            raise LLMError("connection", f"{type(err).__name__}: {err}") from err
        raise


def _assistant_blocks(
    text: str, reasoning: list[ReasoningContent], calls: list[ToolCall]
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        # Reasoning goes back signed, or Anthropic's models on Bedrock refuse the tool turn.
        {"reasoningContent": {"reasoningText": {"text": r.reasoning, "signature": r.signature}}}
        for r in reasoning
        if r.signature
    ]
    if text:
        blocks.append({"text": text})
    for call in calls:
        arguments = call_arguments(call)
        blocks.append(
            {
                "toolUse": {
                    "toolUseId": call.id,
                    "name": call.function.name,
                    "input": arguments,
                }
            }
        )
    return blocks


def _messages(request: LLMRequest) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    system: list[dict[str, Any]] = []
    pairs: list[tuple[str, list[dict[str, Any]]]] = []
    for entry in entries(request.messages):
        if entry.role == "system":
            system.append({"text": entry.text})
        elif entry.role == "assistant":
            pairs.append(
                ("assistant", _assistant_blocks(entry.text, entry.reasoning, entry.tool_calls))
            )
        elif entry.role == "tool":
            result = {"toolUseId": entry.tool_call_id, "content": [{"text": entry.text}]}
            pairs.append(("user", [{"toolResult": result}]))
        elif entry.images:  # the parts in the order sent
            # Converse takes the image's bytes and its format (png, jpeg, gif, webp).
            pairs.append(
                (
                    "user",
                    [
                        {"text": piece}
                        if isinstance(piece, str)
                        else {
                            "image": {
                                "format": piece[0].split("/")[1],
                                "source": {"bytes": base64.b64decode(piece[1])},
                            }
                        }
                        for piece in entry.pieces
                    ],
                )
            )
        elif entry.text:
            pairs.append(("user", [{"text": entry.text}]))
    out = [
        {"role": role, "content": blocks}
        for role, blocks in merged(pairs, {"text": "(session start)"})
    ]
    return system, out


def request_body(request: LLMRequest) -> dict[str, Any]:
    config = request.config
    system, messages = _messages(request)
    body: dict[str, Any] = {
        "modelId": config.model,
        "messages": messages,
        "system": system,
        "inferenceConfig": {"maxTokens": config.max_tokens or DEFAULT_MAX_TOKENS},
    }
    if thinks(config):
        budget = max(config.max_reasoning_tokens, MIN_THINKING_BUDGET)
        body["additionalModelRequestFields"] = {
            "thinking": {"type": "enabled", "budget_tokens": budget}
        }
        body["inferenceConfig"]["maxTokens"] = max(
            body["inferenceConfig"]["maxTokens"], budget + MIN_THINKING_BUDGET
        )
    else:
        body["inferenceConfig"]["temperature"] = config.shown_temperature  # as the agent shows
    if request.tools:
        specs = [
            {
                "name": t["name"],
                "description": t.get("description") or t["name"],
                "inputSchema": {"json": t["parameters"]},
            }
            for t in request.tools
        ]
        body["toolConfig"] = {"tools": [{"toolSpec": spec} for spec in specs]}
        choice = _tool_choice(request.tool_choice, thinking=thinks(config))
        if choice is not None:
            body["toolConfig"]["toolChoice"] = choice
    return body


def _tool_choice(choice: str, *, thinking: bool) -> dict[str, Any] | None:
    """Converse has auto, any and one tool; `none` is left to the model (Converse needs the
    tools declared whenever the history holds tool turns)."""
    if choice in ("auto", "none") or thinking:
        return {"auto": {}}
    if choice == "required":
        return {"any": {}}
    return {"tool": {"name": choice}}


def parse(answer: dict[str, Any]) -> LLMResponse:
    text: list[str] = []
    reasoning: list[ReasoningContent] = []
    calls: list[ToolCall] = []
    message = (answer.get("output") or {}).get("message") or {}
    for block in message.get("content") or ():
        if "text" in block:
            text.append(block["text"] or "")
        elif "reasoningContent" in block:
            said = block["reasoningContent"].get("reasoningText") or {}
            reasoning.append(
                ReasoningContent(
                    reasoning=said.get("text") or "",
                    is_native=True,
                    signature=said.get("signature"),
                )
            )
        elif "toolUse" in block:
            use = block["toolUse"]
            calls.append(
                ToolCall(
                    id=use["toolUseId"],
                    function=FunctionCall(
                        name=use["name"],
                        arguments=use.get("arguments")
                        or json.dumps(use.get("input") or {}, ensure_ascii=False),
                    ),
                )
            )
    counts = answer.get("usage") or {}
    usage = LLMUsage.with_cache(*(counts.get(k) or 0 for k in _USAGE_KEYS))
    return LLMResponse(
        text="".join(text),
        reasoning=reasoning,
        tool_calls=calls,
        usage=usage,
        finish_reason=_FINISH.get(answer.get("stopReason") or "", "other"),
    )
