"""OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, LM Studio)."""

from __future__ import annotations

import json
import time
import weakref
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

from cairn.domain.messages import FunctionCall, Message, ReasoningContent, ToolCall
from cairn.llm import deadline
from cairn.llm.errors import json_object, translate_errors
from cairn.llm.strict_tools import strict
from cairn.llm.transcript import Entry, entries
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
    import openai

# Reasoning models take max_completion_tokens and an effort, and refuse a temperature.
_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}


class OpenAIChat:
    def __init__(self, client: openai.OpenAI) -> None:
        self._client = client

    def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        if on_delta is not None:
            return self._streamed(request, on_delta)
        # The body is already in wire form; the typed `create` would walk it again to
        # transform its params (6-7 ms for a 7-tool request, measured in bench/), so it goes
        # through the SDK's own request method: same retries, auth, timeouts and errors.
        # Sent as JSON bytes made by pydantic-core: 4x faster than the SDK's json.dumps
        # (25 against 97 us for a 28 KB body); the SDK sends `content` as it is.
        body = to_json(request_body(request))
        for attempt in range(self._client.max_retries + 1):
            with translate_errors():
                answer = self._client.post(  # type: ignore[call-overload]
                    "/chat/completions",
                    content=body,
                    cast_to=object,
                    options=deadline.request_options(),
                )
            completion = json_object(answer)
            if completion.get("choices"):
                return parse(completion)
            # A 200 with no choices (seen from proxies and overloaded compatible servers)
            # is the provider failing: asked again, as the SDK retries a 5xx.
            if attempt < self._client.max_retries and not deadline.passed():
                time.sleep(min(8.0, 0.5 * 2**attempt))
        raise LLMError("server", f"The model answered with no choices: {json.dumps(answer)[:500]}")

    def _streamed(self, request: LLMRequest, on_delta: OnDelta) -> LLMResponse:
        """The same call streamed: each chunk's pieces handed on as they arrive, and the
        chunks assembled into the completion the unstreamed call returns (`parse` reads it).
        The SDK retries only until the stream starts; after that a failure is the step's."""
        import openai

        body = to_json(
            request_body(request) | {"stream": True, "stream_options": {"include_usage": True}}
        )
        assembled = Assembled()
        with translate_errors():
            chunks = self._client.post(  # type: ignore[call-overload]
                "/chat/completions",
                content=body,
                cast_to=object,
                stream=True,
                stream_cls=openai.Stream[object],
                options=deadline.request_options(),
            )
            with chunks:
                for chunk in chunks:
                    for delta in assembled.add(json_object(chunk)):
                        on_delta(delta)
        if assembled.finish is None:  # the connection closed before the answer was whole
            raise LLMError("connection", "The model's stream ended before its answer did")
        return parse(assembled.completion())


class Assembled:
    """Chat completion chunks put back together into one completion."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.head: dict[str, Any] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None

    def add(self, chunk: dict[str, Any]) -> list[Delta]:
        self.head = self.head or {k: chunk.get(k) for k in ("id", "model", "created")}
        self.usage = chunk.get("usage") or self.usage
        out: list[Delta] = []
        for choice in chunk.get("choices") or ():
            self.finish = choice.get("finish_reason") or self.finish
            delta = choice.get("delta") or {}
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str) and thought:
                self.reasoning.append(thought)
                out.append(Delta("reasoning", thought))
            if text := delta.get("content"):
                self.text.append(text)
                out.append(Delta("text", text))
            for piece in delta.get("tool_calls") or ():
                call = self.calls.setdefault(
                    piece.get("index", len(self.calls)),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                call["id"] = piece.get("id") or call["id"]
                function = piece.get("function") or {}
                call["function"]["name"] += function.get("name") or ""
                arguments = function.get("arguments") or ""
                call["function"]["arguments"] += arguments
                if arguments:
                    out.append(Delta("tool_call", arguments, call["id"], call["function"]["name"]))
        return out

    def completion(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.reasoning:
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        choice = {"index": 0, "message": message, "finish_reason": self.finish}
        return self.head | {"choices": [choice], "usage": self.usage}


# Letta cuts every tool call id it sends OpenAI to 29 characters (TOOL_CALL_ID_MAX_LEN).
TOOL_CALL_ID_CHARS = 29


def _messages(request: LLMRequest) -> list[dict[str, Any]]:
    in_kwargs = request.config.put_inner_thoughts_in_kwargs
    out: list[dict[str, Any]] = []
    for message in request.messages:
        out += _wire_of(message, in_kwargs)
    return out


# Each message's wire entries, made once for as long as the message lives. A step's window
# is the same Message objects from one step to the next (held parsed by this process:
# store/parsed_windows.py, which already takes them as never changed in place), so only its
# new messages are made into wire form again: a 300-message window's took 475 us a step
# to remake whole, 73 us held (docs/numbers.md). Keyed by identity (a Message is not
# hashable); an entry goes when its message does (the weak reference's callback), before
# its id can be another object's. The entries are shared: nothing may change them.
_WIRE: dict[int, tuple[bool, list[dict[str, Any]], weakref.ref[Message]]] = {}


def _wire_of(message: Message, in_kwargs: bool) -> list[dict[str, Any]]:
    key = id(message)
    found = _WIRE.get(key)
    if found is not None and found[0] == in_kwargs and found[2]() is message:
        return found[1]
    made = [_wire_entry(entry, in_kwargs) for entry in entries([message])]
    _WIRE[key] = (in_kwargs, made, weakref.ref(message, partial(_forget, key)))
    return made


def _forget(key: int, _gone: object) -> None:
    _WIRE.pop(key, None)


def _wire_entry(entry: Entry, in_kwargs: bool) -> dict[str, Any]:
    if entry.role == "tool":
        call_id = (entry.tool_call_id or "")[:TOOL_CALL_ID_CHARS]
        return {"role": "tool", "tool_call_id": call_id, "content": entry.text}
    if entry.role == "assistant":
        thoughts = entry.text or None
        calls = [c.model_dump() for c in entry.tool_calls]
        for call in calls:
            call["id"] = call["id"][:TOOL_CALL_ID_CHARS]
            if in_kwargs:  # the thoughts go back where the model wrote them
                call["function"]["arguments"] = _with_thoughts(call, thoughts)
        content = None if in_kwargs and calls else thoughts
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            message["tool_calls"] = calls
        return message
    return {"role": entry.role, "content": _user_content(entry)}


def _with_thoughts(call: dict[str, Any], thoughts: str | None) -> str:
    """A call's arguments with the inner thoughts first, as Letta writes them back for an
    agent that thinks in its calls (add_inner_thoughts_to_tool_call: indented JSON)."""
    try:
        args = json.loads(call["function"]["arguments"] or "{}")
    except ValueError:
        return str(call["function"]["arguments"])
    if not isinstance(args, dict):
        return str(call["function"]["arguments"])
    return json.dumps({"thinking": thoughts, **args}, indent=2, ensure_ascii=False)


def request_body(request: LLMRequest) -> dict[str, Any]:
    config = request.config
    body: dict[str, Any] = {"model": config.model, "messages": _messages(request)}
    reasoning = config.reasoning_effort is not None or config.model.startswith(_REASONING_PREFIXES)
    # As Letta's OpenAI client asks (build_request_data): OpenAI's own API takes the token
    # limit as max_completion_tokens (servers that only speak its older dialect, max_tokens);
    # the temperature the agent shows, 1.0 for a model that takes no other; the frequency
    # penalty when set; the caller as `user`.
    if config.max_tokens:
        newer = reasoning or config.model_endpoint_type == "openai"
        body["max_completion_tokens" if newer else "max_tokens"] = config.max_tokens
    if reasoning and config.reasoning_effort:
        body["reasoning_effort"] = config.reasoning_effort
    body["temperature"] = 1.0 if reasoning else config.shown_temperature
    if (penalty := (config.model_extra or {}).get("frequency_penalty")) is not None:
        body["frequency_penalty"] = penalty
    if request.user:
        body["user"] = request.user
    if request.tools:
        # Strict, as Letta sends every tool, but to the one server it knows refuses it.
        strict_ok = "nebius.com" not in (config.model_endpoint or "")
        body["tools"] = [
            {"type": "function", "function": strict(t) if strict_ok else t} for t in request.tools
        ]
        choice = request.tool_choice
        body["tool_choice"] = (
            choice
            if choice in ("auto", "required", "none")
            else {"type": "function", "function": {"name": choice}}
        )
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


def _user_content(entry: Entry) -> Any:
    """Text alone as a string; with images, OpenAI's parts in the order sent (each image a
    data URL)."""
    if not entry.images:
        return entry.text
    return [
        {"type": "text", "text": piece}
        if isinstance(piece, str)
        else {"type": "image_url", "image_url": {"url": f"data:{piece[0]};base64,{piece[1]}"}}
        for piece in entry.pieces
    ]
