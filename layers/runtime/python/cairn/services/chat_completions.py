"""Letta's OpenAI-compatible door: `POST /v1/chat/completions` with an agent's id as the
model. As in Letta, only the request's last user message is sent (the agent keeps the
conversation itself); the answer is what the agent said in the turn.

Letta 0.16.1 answers only `stream: true` (a non-streamed request is its 400 "not yet
implemented"); Cairn answers both (docs/api.md).
"""

from __future__ import annotations

import time
from typing import Any

from cairn.domain.agents import Agent
from cairn.errors import InvalidArgumentError
from cairn.orchestration.assembly.parts import Runtime
from cairn.services import agents as agent_service
from cairn.services.requests import ChatCompletionRequest, LettaRequest


def prepare(rt: Runtime, org: str, req: ChatCompletionRequest) -> tuple[Agent, LettaRequest]:
    """The agent the request names and the send it makes of it (Letta's checks and words)."""
    if not req.model.startswith("agent-"):
        raise InvalidArgumentError(
            "For this endpoint, the 'model' field should contain an agent ID (format: "
            f"'agent-...'). Received: '{req.model}'"
        )
    with rt.db.connection() as conn:
        agent = agent_service.fetch(conn, org, req.model)
    last = next((m for m in reversed(req.messages) if m.get("role", "user") == "user"), None)
    if last is None:
        raise InvalidArgumentError(
            "No user message found in the request. Please include at least one message with "
            "role='user'."
        )
    content = last.get("content") or ""
    send = LettaRequest.model_validate({
        "messages": [{"role": "user", "content": content}], "stream_tokens": bool(req.stream),
    })  # fmt: skip
    return agent, send


def completion(
    agent: Agent, run_id: str, texts: list[str], usage: dict[str, Any]
) -> dict[str, Any]:
    """OpenAI's ChatCompletion of a finished turn: the agent's words, one choice."""

    prompt = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    return {
        "id": f"chatcmpl-{run_id}", "object": "chat.completion", "created": int(time.time()),
        "model": agent.llm_config.model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": "\n".join(texts),
                                 "refusal": None}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion_tokens,
                  "total_tokens": prompt + completion_tokens},
    }  # fmt: skip
