"""Messages: send (sync, async, stream), list, cancel, capture."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta, streaming
from cairn.api.paging import paged
from cairn.api.params import AgentId, MessageId
from cairn.domain.runs import TERMINAL_RUN_STATUSES
from cairn.errors import UnprocessableError
from cairn.services import messages, streams
from cairn.services.pages import Page
from cairn.services.requests import (
    CancelRequest,
    CaptureRequest,
    LettaRequest,
    MessageSearch,
    MessageUpdate,
)

router = APIGatewayHttpRouter()


def _reply(sent: messages.Sent, req: LettaRequest) -> dict[str, Any]:
    made = messages.produced(http.rt(), sent)
    return letta.response_json(made, sent.run.stop_reason, letta.usage_json(sent.run), req)


@router.post("/agents/<agent_id>/messages")
def send_message(agent_id: AgentId, req: Annotated[LettaRequest, Body()]) -> Response[Any]:
    if not req.streaming and (req.stream_tokens or req.background or req.include_pings is False):
        raise UnprocessableError(
            "Streaming options set without streaming enabled. Set streaming=true or use the "
            "/messages/stream endpoint."
        )
    if req.streaming:
        return _stream(agent_id, req, "send_message")
    sent = messages.send(
        http.rt(), http.org_id(), agent_id, req, wait=True, run_type="send_message"
    )
    run = sent.run
    if run.status not in TERMINAL_RUN_STATUSES:
        # Past the budget: answer with the run to poll (README, "Sending messages").
        return http.json_reply(202, letta.run_json(run))
    if run.stop_reason == "llm_api_error":
        return http.run_error_reply(run)
    return http.json_reply(200, _reply(sent, req))


@router.post("/agents/<agent_id>/messages/stream")
def stream_message(agent_id: AgentId, req: Annotated[LettaRequest, Body()]) -> Response[Any]:
    return _stream(agent_id, req, "send_message_streaming")


def _stream(agent_id: AgentId, req: LettaRequest, run_type: str) -> Response[Any]:
    """The run starts here (a bad request or a busy agent answers as JSON); its events
    are sent as its steps make them."""
    run, events = streams.send(http.rt(), http.org_id(), agent_id, req, run_type=run_type)
    letta_sse = streaming.Letta(
        run.id,
        use_assistant_message=req.use_assistant_message,
        only=req.include_return_message_types,
        numbered=req.background,
    )
    return http.stream_reply(letta_sse.frames(events))


@router.post("/agents/<agent_id>/messages/async")
def send_message_async(agent_id: AgentId, req: Annotated[LettaRequest, Body()]) -> Response[Any]:
    sent = messages.send(
        http.rt(), http.org_id(), agent_id, req, wait=False, run_type="send_message_async"
    )
    return http.json_reply(200, letta.run_json(sent.run))


@router.post("/agents/<agent_id>/summarize")
def summarize(agent_id: AgentId) -> Response[Any]:
    """Letta answers 204; a compaction still going past the budget answers 202 and its run."""
    run = messages.summarize(http.rt(), http.org_id(), agent_id).run
    if run.status not in TERMINAL_RUN_STATUSES:
        return http.json_reply(202, letta.run_json(run))
    if run.stop_reason == "llm_api_error":
        return http.run_error_reply(run)
    return Response(status_code=204, body="")


@router.post("/agents/<agent_id>/messages/preview-raw-payload")
def preview_raw_payload(agent_id: AgentId, req: Annotated[LettaRequest, Body()]) -> Response[Any]:
    """What the model provider would be sent for these messages; nothing is run or stored."""
    return http.json_reply(200, messages.preview(http.rt(), http.org_id(), agent_id, req))


@router.get("/agents/<agent_id>/messages")
@paged(limit=100, order="desc")
def list_messages(
    agent_id: AgentId,
    include_err: bool = False,
    use_assistant_message: bool = True,
    *,
    page: Page,
) -> Response[Any]:
    rows = messages.history(
        http.rt(),
        http.org_id(),
        agent_id,
        page=page,
        include_err=include_err,
    )
    shown = letta.expand(rows, use_assistant_message=use_assistant_message)
    # A newest-first page is shown oldest first: what is cut is its oldest, the next page's.
    return http.page_reply(shown, keep_end=page.order == "desc")


@router.post("/agents/<agent_id>/messages/cancel")
def cancel(agent_id: AgentId, req: Annotated[CancelRequest | None, Body()] = None) -> Response[Any]:
    result = messages.cancel(http.rt(), http.org_id(), agent_id, req.run_ids if req else None)
    return http.json_reply(200, result)


@router.post("/agents/<agent_id>/messages/capture")
def capture(agent_id: AgentId, req: Annotated[CaptureRequest, Body()]) -> Response[Any]:
    """Append messages to an agent's history without running it (Cairn's addition)."""
    rows = messages.capture(http.rt(), http.org_id(), agent_id, req)
    return http.json_reply(200, letta.expand(rows))


@router.patch("/agents/<agent_id>/messages/<message_id>")
def edit_message(
    agent_id: AgentId, message_id: MessageId, req: Annotated[MessageUpdate, Body()]
) -> Response[Any]:
    edited = messages.edit(http.rt(), http.org_id(), agent_id, message_id, req)
    return http.json_reply(200, letta.edited_json(edited, req.message_type))


@router.post("/agents/messages/search")
def search_messages(req: Annotated[MessageSearch, Body()]) -> Response[Any]:
    found = messages.search(http.rt(), http.org_id(), req)
    return http.json_reply(
        200,
        [
            {
                "embedded_text": f.message.search_text(),
                "message": letta.message_json(f.message),
                "fts_rank": f.fts_rank,
                "vector_rank": f.vector_rank,
                "rrf_score": f.rrf_score,
            }
            for f in found
        ],
    )


@router.get("/messages/")
@paged(limit=100, order="desc")
def list_all_messages(*, page: Page) -> Response[Any]:
    found = messages.list_all(http.rt(), http.org_id(), page=page)
    return http.json_reply(200, letta.expand(found))


@router.post("/messages/search")
def search_all_messages(req: Annotated[MessageSearch, Body()]) -> Response[Any]:
    """Every agent's messages by full text, as Letta's list results."""
    found = messages.search(http.rt(), http.org_id(), req.model_copy(update={"agent_id": None}))
    results = []
    for f in found:
        for shown in letta.letta_messages(f.message):
            if "content" in shown:
                results.append(
                    {
                        "message_type": shown["message_type"],
                        "content": shown["content"],
                        "message_id": f.message.id,
                        "agent_id": f.message.agent_id,
                        "created_at": letta.iso(f.message.created_at),
                    }
                )
                break
    return http.json_reply(200, results)
