"""Gemini through Google's official SDK (google-genai), as Letta names it: `google_ai`.

Gemini's newer models refuse a `system` role: the system text goes in `system_instruction`
and the history holds only `user` and `model` turns (the agent's own messages are
`model`; tool results are `function_response` parts of a `user` entry). Tools are function
declarations with their JSON schema as is (`parameters_json_schema`). A call's id is
Gemini's when it gives one; otherwise Cairn makes one (`gm-...`), which is never sent back.
Thinking models sign their turn: the signature is kept as the message's reasoning and sent
back on the turn's first call (or text), as Gemini requires for a tool turn to go on.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cairn.domain.messages import FunctionCall, ReasoningContent, ToolCall
from cairn.llm import deadline
from cairn.llm.errors import translate_errors
from cairn.llm.reasoning import GEMINI_THINKING
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

GEMINI_URL = "https://generativelanguage.googleapis.com"
OWN_ID = "gm-"  # a call id Cairn made (Gemini gave none): not sent back
_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "BLOCKLIST": "content_filter",
    "SPII": "content_filter",
}
_STATUS: dict[int, ErrorKind] = {401: "auth", 403: "auth", 429: "rate_limit", 408: "timeout"}


# The models Letta 0.16.1 gives a thinking config (its Google client's is_reasoning_model).
THINKING_MODELS = (*GEMINI_THINKING, "gemini-3")


class Gemini:
    def __init__(self, client: Any, retries: int) -> None:
        self._client, self._retries = client, retries  # a google.genai.Client

    def complete(self, request: LLMRequest, on_delta: OnDelta | None = None) -> LLMResponse:
        contents, config = request_body(request)
        config["http_options"] = self._http_options()
        model = request.config.model
        with translate_errors(), gemini_errors():
            if on_delta is None:
                answer = self._client.models.generate_content(
                    model=model, contents=contents, config=config
                )
                whole = answer.model_dump(mode="json", exclude_none=True)
                if not whole.get("candidates"):
                    raise _no_answer(whole)
                return parse([whole])
            chunks = []
            for chunk in self._client.models.generate_content_stream(
                model=model, contents=contents, config=config
            ):
                data = chunk.model_dump(mode="json", exclude_none=True)
                chunks.append(data)
                for delta in deltas(data):
                    on_delta(delta)
        if not any(c.get("candidates") for c in chunks):
            raise LLMError("connection", "The model's stream ended before its answer did")
        return parse(chunks)

    def _http_options(self) -> dict[str, Any]:
        """Under a deadline (a sync send): the time left as the timeout, and no retries."""
        limits = deadline.request_options()
        if not limits:
            return {"retry_options": {"attempts": self._retries + 1}}
        return {"timeout": int(limits["timeout"] * 1000), "retry_options": {"attempts": 1}}


@contextmanager
def gemini_errors() -> Iterator[None]:
    """The SDK's APIError (after its retries) as one LLMError, by status code; httpx's own
    errors (timeouts, lost connections) are left to translate_errors around this."""
    try:
        yield
    except LLMError:
        raise
    except Exception as err:
        if "APIError" not in {cls.__name__ for cls in type(err).__mro__}:
            raise
        code = int(getattr(err, "code", 500) or 500)
        kind = _STATUS.get(code) or ("server" if code >= 500 else "bad_request")
        raise LLMError(kind, f"{type(err).__name__}: {err}", status=code) from err


def _model_parts(
    text: str, reasoning: list[ReasoningContent], calls: list[ToolCall]
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"text": text})
    for call in calls:
        function: dict[str, Any] = {"name": call.function.name, "args": call_arguments(call)}
        if not call.id.startswith(OWN_ID):
            function["id"] = call.id
        parts.append({"function_call": function})
    signature = next((r.signature for r in reasoning if r.signature), None)
    if signature and parts:
        # On the first call if there is one, else on the text: where Gemini put it.
        first = next((p for p in parts if "function_call" in p), parts[0])
        first["thought_signature"] = base64.b64decode(signature)  # the SDK sends bytes
    return parts


def request_body(request: LLMRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(contents, config) for `models.generate_content`."""
    system: list[str] = []
    names: dict[str, str] = {}  # call id -> tool name, for the responses
    pairs: list[tuple[str, list[dict[str, Any]]]] = []
    for entry in entries(request.messages):
        if entry.role == "system":
            system.append(entry.text)
        elif entry.role == "assistant":
            names.update({c.id: c.function.name for c in entry.tool_calls})
            pairs.append(("model", _model_parts(entry.text, entry.reasoning, entry.tool_calls)))
        elif entry.role == "tool":
            call_id = entry.tool_call_id or ""
            response: dict[str, Any] = {
                "name": names.get(call_id, "tool"),
                "response": {"result": entry.text},
            }
            if call_id and not call_id.startswith(OWN_ID):
                response["id"] = call_id
            pairs.append(("user", [{"function_response": response}]))
        elif entry.images:  # the parts in the order sent
            # The SDK's Blob takes the bytes (it base64s them on the wire itself).
            pairs.append(
                (
                    "user",
                    [
                        {"text": piece}
                        if isinstance(piece, str)
                        else {
                            "inline_data": {
                                "mime_type": piece[0],
                                "data": base64.b64decode(piece[1]),
                            }
                        }
                        for piece in entry.pieces
                    ],
                )
            )
        elif entry.text:
            pairs.append(("user", [{"text": entry.text}]))
    opener = {"text": "(session start)"}
    contents = [{"role": role, "parts": parts} for role, parts in merged(pairs, opener)]
    config = request.config
    body: dict[str, Any] = {"automatic_function_calling": {"disable": True}}
    if system:
        body["system_instruction"] = "\n\n".join(system)
    if config.max_tokens:
        body["max_output_tokens"] = config.max_tokens
    body["temperature"] = config.shown_temperature  # what the agent shows, as Letta sends
    # Thinking for the models Letta gives a thinking config (its Google client's
    # is_reasoning_model, or a flash model), when the agent asks for it.
    thinking_model = config.model.startswith(THINKING_MODELS) or "flash" in config.model
    if thinking_model and (config.enable_reasoner or config.max_reasoning_tokens):
        budget = config.max_reasoning_tokens or -1  # -1: the model decides
        body["thinking_config"] = {"include_thoughts": True, "thinking_budget": budget}
    if request.tools:
        body["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": t["name"],
                        "description": t.get("description", ""),
                        "parameters_json_schema": t["parameters"],
                    }
                    for t in request.tools
                ]
            }
        ]
        body["tool_config"] = {"function_calling_config": _tool_choice(request.tool_choice)}
    return contents, body


def _tool_choice(choice: str) -> dict[str, Any]:
    if choice == "auto":
        return {"mode": "AUTO"}
    if choice == "none":
        return {"mode": "NONE"}
    if choice == "required":
        return {"mode": "ANY"}
    return {"mode": "ANY", "allowed_function_names": [choice]}


def _no_answer(whole: dict[str, Any]) -> LLMError:
    """A 200 with no candidate: a prompt Gemini blocked says why (the request's fault);
    anything else (a proxy's `{"data": []}`) is the provider failing, not an empty entry."""
    blocked = (whole.get("prompt_feedback") or {}).get("block_reason")
    if blocked:
        return LLMError("bad_request", f"The model refused the prompt: {blocked}", status=400)
    return LLMError("server", f"The model answered with no candidates: {str(whole)[:500]}")


def _parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = chunk.get("candidates") or [{}]
    return list((candidates[0].get("content") or {}).get("parts") or ())


def deltas(chunk: dict[str, Any]) -> Iterator[Delta]:
    """A streamed chunk's pieces: text, thoughts, and each call whole (Gemini sends a call
    in one chunk)."""
    for part in _parts(chunk):
        if part.get("text"):
            yield Delta("reasoning" if part.get("thought") else "text", part["text"])
        elif call := part.get("function_call"):
            arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
            yield Delta("tool_call", arguments, call.get("id"), call.get("name"))


def parse(chunks: list[dict[str, Any]]) -> LLMResponse:
    """One response from its chunks (a whole answer is one chunk)."""
    text: list[str] = []
    thoughts: list[str] = []
    signature: str | None = None
    calls: list[ToolCall] = []
    for chunk in chunks:
        for part in _parts(chunk):
            sig = part.get("thought_signature")
            signature = signature or (sig if isinstance(sig, str) else _b64(sig))
            if part.get("text"):
                (thoughts if part.get("thought") else text).append(part["text"])
            elif call := part.get("function_call"):
                calls.append(
                    ToolCall(
                        id=call.get("id") or f"{OWN_ID}{uuid.uuid4().hex[:24]}",
                        function=FunctionCall(
                            name=call.get("name") or "",
                            arguments=json.dumps(call.get("args") or {}, ensure_ascii=False),
                        ),
                    )
                )
    last = chunks[-1] if chunks else {}
    usage: dict[str, Any] = next(
        (c["usage_metadata"] for c in reversed(chunks) if c.get("usage_metadata")), {}
    )
    finish = str(((last.get("candidates") or [{}])[0]).get("finish_reason") or "")
    reasoning = (
        [ReasoningContent(reasoning="".join(thoughts), is_native=True, signature=signature)]
        if thoughts or signature
        else []
    )
    prompt = usage.get("prompt_token_count") or 0
    output = (usage.get("candidates_token_count") or 0) + (usage.get("thoughts_token_count") or 0)
    return LLMResponse(
        text="".join(text),
        reasoning=reasoning,
        tool_calls=calls,
        usage=LLMUsage(
            prompt_tokens=prompt,
            completion_tokens=output,
            total_tokens=usage.get("total_token_count") or prompt + output,
            cached_input_tokens=usage.get("cached_content_token_count") or 0,
            reasoning_tokens=usage.get("thoughts_token_count") or 0,
        ),
        finish_reason="tool_calls" if calls else _FINISH.get(finish.split(".")[-1], "other"),
        model=last.get("model_version"),
    )


def _b64(value: Any) -> str | None:
    return base64.b64encode(value).decode() if isinstance(value, bytes) and value else None
