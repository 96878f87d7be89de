"""Anthropic Messages: system as its own parameter, tool_use / tool_result blocks, thinking."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cairn.domain.configs import LLMConfig
from cairn.domain.messages import FunctionCall, ReasoningContent, ToolCall
from cairn.llm import deadline
from cairn.llm.errors import json_object, translate_errors
from cairn.llm.reasoning import ANTHROPIC_THINKING
from cairn.llm.transcript import call_arguments, entries, merged
from cairn.llm.types import (
    Delta,
    FinishReason,
    LLMError,
    LLMRequest,
    LLMResponse,
    LLMUsage,
    OnDelta,
)

if TYPE_CHECKING:
    import anthropic

DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024


def thinks(config: LLMConfig) -> bool:
    """Asked to think, as Letta 0.16.1 asks: `enable_reasoner` on a model that can (its
    AnthropicClient.is_reasoning_model); any other model is asked without thinking. A
    Bedrock id is read by its model part (Letta reads it whole, so never asks Bedrock)."""
    model = config.model.rsplit("anthropic.", 1)[-1]
    return config.enable_reasoner and model.startswith(ANTHROPIC_THINKING)


_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)  # uncached, output, cache read, cache write
_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


class AnthropicMessages:
    def __init__(self, client: anthropic.Anthropic) -> None:
        self._client = client

    def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        if on_delta is not None:
            return self._streamed(request, on_delta)
        # Wire-form body through the SDK's request method, as for OpenAI (openai_chat.py).
        with translate_errors():
            answer = self._client.post(  # type: ignore[call-overload]
                "/v1/messages",
                body=request_body(request),
                cast_to=object,
                options=_options(request.config, streamed=False),
            )
        message = json_object(answer)
        if not isinstance(message.get("content"), list):
            # A 200 that is no message (a proxy's or a compatible server's `{"data": []}`)
            # is the provider failing, not an empty turn that completes the run.
            raise LLMError("server", f"The model answered with no message: {str(answer)[:500]}")
        return parse(message)

    def _streamed(self, request: LLMRequest, on_delta: OnDelta) -> LLMResponse:
        """The same call streamed: each event's piece handed on as it arrives, and the
        events assembled into the message the unstreamed call returns (`parse` reads it)."""
        import anthropic

        assembled = Assembled()
        with translate_errors():
            events = self._client.post(  # type: ignore[call-overload]
                "/v1/messages",
                body=request_body(request) | {"stream": True},
                cast_to=object,
                stream=True,
                stream_cls=anthropic.Stream[object],
                options=_options(request.config, streamed=True),
            )
            with events:
                for event in events:
                    delta = assembled.add(json_object(event))
                    if delta is not None:
                        on_delta(delta)
        if assembled.message is None or not assembled.stopped:
            raise LLMError("connection", "The model's stream ended before its message did")
        return parse(assembled.message)


def betas(config: LLMConfig, *, streamed: bool) -> list[str]:
    """The beta features Letta 0.16.1's Anthropic client asks for (it always calls the beta
    Messages API): tool arguments streamed in fine pieces, thinking between tool calls when
    the agent may think, and Opus 4.5's context management of thinking blocks."""
    asked = ["fine-grained-tool-streaming-2025-05-14"] if streamed else []
    if config.enable_reasoner:
        asked.append("interleaved-thinking-2025-05-14")
        if config.model.startswith("claude-opus-4-5"):
            asked.append("context-management-2025-06-27")
    return asked


def _options(config: LLMConfig, *, streamed: bool) -> dict[str, Any]:
    options: dict[str, Any] = {**deadline.request_options(), "params": {"beta": "true"}}
    if asked := betas(config, streamed=streamed):
        options["headers"] = {"anthropic-beta": ",".join(asked)}
    return options


class Assembled:
    """Messages stream events put back together into one message."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.raw: dict[int, list[str]] = {}  # each tool_use block's input JSON, as sent
        self.stopped = False

    def add(self, event: dict[str, Any]) -> Delta | None:
        kind = event.get("type")
        if kind == "message_start":
            self.message = dict(event.get("message") or {}, content=[])
            return None
        message = self.message
        if message is None:
            return None
        blocks: list[dict[str, Any]] = message["content"]
        if kind == "content_block_start":
            blocks.append(dict(event.get("content_block") or {}))
        elif kind == "content_block_delta" and blocks:
            return self._delta(blocks[-1], len(blocks) - 1, event.get("delta") or {})
        elif kind == "content_block_stop" and blocks and blocks[-1].get("type") == "tool_use":
            raw = "".join(self.raw.pop(len(blocks) - 1, []))
            blocks[-1]["input"] = json.loads(raw) if raw else {}
            # The call's arguments as streamed, so the pieces a client got add up to them.
            blocks[-1]["arguments"] = raw or "{}"
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            message["usage"] = (message.get("usage") or {}) | (event.get("usage") or {})
        elif kind == "message_stop":
            self.stopped = True
        return None

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> Delta | None:
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.get("text", "")
            return Delta("text", delta.get("text", ""))
        if kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            return Delta("reasoning", delta.get("thinking", ""))
        if kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "input_json_delta":
            piece = delta.get("partial_json", "")
            self.raw.setdefault(index, []).append(piece)
            return Delta("tool_call", piece, block.get("id"), block.get("name")) if piece else None
        return None


def _assistant_blocks(
    text: str, reasoning: list[ReasoningContent], calls: list[ToolCall]
) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        # Thinking goes back with its signature, or Anthropic rejects the next tool turn.
        {"type": "thinking", "thinking": r.reasoning, "signature": r.signature}
        for r in reasoning
        if r.signature
    ]
    if text:
        blocks.append({"type": "text", "text": text})
    for call in calls:
        arguments = call_arguments(call)
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": arguments,
            }
        )
    return blocks


def _messages(request: LLMRequest) -> tuple[str, list[dict[str, Any]]]:
    system: list[str] = []
    pairs: list[tuple[str, list[dict[str, Any]]]] = []
    for entry in entries(request.messages):
        if entry.role == "system":
            system.append(entry.text)
        elif entry.role == "assistant":
            pairs.append(
                ("assistant", _assistant_blocks(entry.text, entry.reasoning, entry.tool_calls))
            )
        elif entry.role == "tool":
            pairs.append(
                (
                    "user",
                    [
                        {
                            "type": "tool_result",
                            "tool_use_id": entry.tool_call_id,
                            "content": entry.text,
                        }
                    ],
                )
            )
        elif entry.images:  # the parts in the order sent
            pairs.append(
                (
                    "user",
                    [
                        {"type": "text", "text": piece}
                        if isinstance(piece, str)
                        else {
                            "type": "image",
                            "source": {"type": "base64", "media_type": piece[0], "data": piece[1]},
                        }
                        for piece in entry.pieces
                    ],
                )
            )
        elif entry.text:
            pairs.append(("user", [{"type": "text", "text": entry.text}]))
    opener = {"type": "text", "text": "(session start)"}
    out = [
        {"role": role, "content": _plain(role, blocks)} for role, blocks in merged(pairs, opener)
    ]
    return "\n\n".join(system), out


def _plain(role: str, blocks: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A user's message of one text is sent as its text, as Letta's client sends it."""
    only = blocks[0] if role == "user" and len(blocks) == 1 else {}
    plain = only.keys() == {"type", "text"} and only["type"] == "text"
    return str(only["text"]) if plain else blocks


# Prompt caching: a step sends the whole context again, and Anthropic caches a prompt's
# prefix up to each marked block. Three marks: the tools (they change with the rules' choice
# of tools), the system message (rewritten only when memory changes), and the end of the
# history, so the next step of the turn, and the next turn within the cache's five minutes,
# reads everything before its own new messages at a tenth of the input price.
CACHE = {"type": "ephemeral"}


def request_body(request: LLMRequest) -> dict[str, Any]:
    config = request.config
    system, messages = _messages(request)
    if messages and isinstance(messages[-1]["content"], str):  # a block, to take the mark
        messages[-1]["content"] = [{"type": "text", "text": messages[-1]["content"]}]
    if messages and messages[-1]["content"]:
        last = messages[-1]["content"][-1]
        if last.get("type") in ("text", "tool_result"):  # not thinking: it takes no mark
            messages[-1]["content"][-1] = {**last, "cache_control": CACHE}
    body: dict[str, Any] = {
        "model": config.model,
        "system": [{"type": "text", "text": system, "cache_control": CACHE}] if system else [],
        "messages": messages,
        "max_tokens": config.max_tokens or DEFAULT_MAX_TOKENS,
    }
    thinking = thinks(config)
    if thinking:
        budget = max(config.max_reasoning_tokens, MIN_THINKING_BUDGET)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        body["max_tokens"] = max(body["max_tokens"], budget + MIN_THINKING_BUDGET)
        body["temperature"] = 1.0  # the only one Anthropic takes with thinking (as Letta sends)
    else:
        body["temperature"] = config.shown_temperature  # what the agent shows, as Letta
    if request.tools:
        body["tools"] = [
            {
                "name": t["name"],
                "description": t.get("description", ""),
                "input_schema": t["parameters"],
            }
            for t in request.tools
        ]
        body["tools"][-1]["cache_control"] = CACHE
        body["tool_choice"] = _tool_choice(request.tool_choice, thinking=thinking)
        if body["tool_choice"]["type"] != "none":
            body["tool_choice"]["disable_parallel_tool_use"] = not config.parallel_tool_calls
    return body


def _tool_choice(choice: str, *, thinking: bool) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if thinking:
        # Extended thinking only allows auto or none; forcing a tool is refused with a 400.
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def parse(message: dict[str, Any]) -> LLMResponse:
    text: list[str] = []
    reasoning: list[ReasoningContent] = []
    calls: list[ToolCall] = []
    for block in message.get("content") or ():
        kind = block.get("type")
        if kind == "text":
            text.append(block.get("text") or "")
        elif kind == "thinking":
            reasoning.append(
                ReasoningContent(
                    reasoning=block.get("thinking") or "",
                    is_native=True,
                    signature=block.get("signature"),
                )
            )
        elif kind == "tool_use":
            calls.append(
                ToolCall(
                    id=block["id"],
                    function=FunctionCall(
                        name=block["name"],
                        arguments=block.get("arguments")
                        or json.dumps(block.get("input") or {}, ensure_ascii=False),
                    ),
                )
            )
    counts = message.get("usage") or {}
    usage = LLMUsage.with_cache(*(counts.get(k) or 0 for k in _USAGE_KEYS))
    return LLMResponse(
        text="".join(text),
        reasoning=reasoning,
        tool_calls=calls,
        usage=usage,
        finish_reason=_FINISH.get(message.get("stop_reason") or "", "other"),
        model=message.get("model"),
    )
