"""Letta's OpenAI-compatible door: `POST /v1/chat/completions` with an agent's id as the
model. As in Letta, only the request's last user message is sent (the agent keeps the
conversation itself); the answer is what the agent said in the turn.

Letta 0.16.1 answers only `stream: true` (a non-streamed request is its 400 "not yet
implemented"); Cairn answers both (docs/api.md).
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import ValidationError

from cairn.chat_completions.requests import ChatCompletionRequest
from cairn.domain.agents import Agent
from cairn.errors import InvalidArgumentError
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services.requests import LettaRequest


def prepare(rt: Runtime, org: str, req: ChatCompletionRequest) -> tuple[Agent, LettaRequest]:
    """The agent the request names and the send it makes of it (Letta's checks and words)."""
    if not req.model.startswith("agent-"):
        raise InvalidArgumentError(
            "For this endpoint, the 'model' field should contain an agent ID (format: "
            f"'agent-...'). Received: '{req.model}'"
        )
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, req.model)
    users = [n for n, m in enumerate(req.messages) if m.get("role", "user") == "user"]
    if not users:
        raise InvalidArgumentError(
            "No user message found in the request. Please include at least one message with "
            "role='user'."
        )
    where = f"messages[{users[-1]}].content"
    content = letta_content(req.messages[users[-1]].get("content"), where)
    try:
        send = LettaRequest.model_validate(
            {
                "messages": [{"role": "user", "content": content}],
                "stream_tokens": bool(req.stream),
            }
        )
    except ValidationError as err:  # a text too long
        raise InvalidArgumentError(f"{where}: {err.errors()[0]['msg']}") from None
    return agent, send


def letta_content(content: Any, where: str) -> str | list[dict[str, Any]]:
    """An OpenAI message's content as Letta's: a string, or its parts in order, text as
    text and `image_url` (a `data:` URL or an http(s) one) as Letta's image; anything else
    is a 400 naming the part."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise InvalidArgumentError(
            f"{where}: a string or a non-empty list of content parts (text, image_url)"
        )
    return [_part(part, f"{where}[{n}]") for n, part in enumerate(content)]


def _part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind == "text" and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "text":
        raise InvalidArgumentError(f"{where}.text: a text part needs its text (a string)")
    if kind != "image_url":
        raise InvalidArgumentError(
            f'{where}: a content part is {{"type": "text", '
            '"text": ...} or {"type": "image_url", '
            '"image_url": {"url": ...}}'
        )
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str) or not url:
        raise InvalidArgumentError(f"{where}.image_url.url: the image's URL (a string)")
    if url.startswith("data:"):
        head, comma, data = url.partition(",")
        media = head.removeprefix("data:").removesuffix(";base64")
        if not comma or not head.endswith(";base64") or not media.startswith("image/"):
            raise InvalidArgumentError(
                f"{where}.image_url.url: a data URL of an image in "
                "base64 (data:image/png;base64,...)"
            )
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    if url.lower().startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    raise InvalidArgumentError(f"{where}.image_url.url: an https URL or a data: URL")


def completion(
    agent: Agent, run_id: str, texts: list[str], usage: dict[str, Any]
) -> dict[str, Any]:
    """OpenAI's ChatCompletion of a finished turn: the agent's words, one choice."""

    prompt = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    return {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": agent.llm_config.model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "logprobs": None,
                "message": {"role": "assistant", "content": "\n".join(texts), "refusal": None},
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }
