"""Letta's OpenAI-compatible chat completions: an agent as OpenAI's `model`."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.chat_completions import service as chat_completions
from cairn.chat_completions.chunks import ChatChunks
from cairn.chat_completions.requests import ChatCompletionRequest
from cairn.domain.runs import TERMINAL_RUN_STATUSES
from cairn.services import messages, streams

router = APIGatewayHttpRouter()


@router.post("/chat/completions")
def create_chat_completion(req: Annotated[ChatCompletionRequest, Body()]) -> Response[Any]:
    rt, org = http.rt(), http.org_id()
    agent, send = chat_completions.prepare(rt, org, req)
    if req.stream:
        run, events = streams.send(rt, org, agent.id, send, run_type="openai_chat_completions")
        chunks = ChatChunks(
            f"chatcmpl-{run.id}", agent.llm_config.model, include_usage=req.include_usage
        )
        return http.stream_reply(chunks.frames(events))
    sent = messages.send(rt, org, agent.id, send, wait=True, run_type="openai_chat_completions")
    if sent.run.status not in TERMINAL_RUN_STATUSES:
        return http.json_reply(202, letta.run_json(sent.run))  # past the budget: its run
    if sent.run.stop_reason == "llm_api_error":  # an error, as the messages route answers
        return http.run_error_reply(sent.run)
    said = letta.expand(messages.produced(rt, sent), use_assistant_message=True)
    texts = [
        m["content"]
        if isinstance(m["content"], str)
        else "".join(p.get("text", "") for p in m["content"])
        for m in said
        if m["message_type"] == "assistant_message"
    ]
    usage = letta.usage_json(sent.run)
    return http.json_reply(200, chat_completions.completion(agent, sent.run.id, texts, usage))


@router.post("/voice-beta/<agent_id>/chat/completions")
def create_voice_chat_completions(
    agent_id: str, req: Annotated[dict[str, Any], Body()]
) -> Response[Any]:
    """Letta 0.16.1's deprecated voice door: it answers 410 to every request, and so does
    Cairn (a voice client uses the agent's messages or the chat completions above)."""
    detail = "The /voice-beta endpoint has been deprecated and is no longer available."
    return http.json_reply(410, {"detail": detail})
