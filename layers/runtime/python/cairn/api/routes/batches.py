"""Message batches: one message to each of many agents, run in the background."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.domain.ids import id_pattern
from cairn.services import batches
from cairn.services.pages import Page
from cairn.services.requests import CreateBatch

router = APIGatewayHttpRouter()
BatchId = Annotated[str, Path(pattern=id_pattern("job"), description="The batch id, `job-<uuid4>`")]
AgentFilter = Annotated[str | None, Query(pattern=id_pattern("agent"))]


@router.post("/messages/batches")
def create_batch(req: Annotated[CreateBatch, Body()]) -> Response[Any]:
    batch = batches.create(http.rt(), http.org_id(), None, req)
    return http.json_reply(200, letta.batch_json(batch))


@router.get("/messages/batches")
@paged(limit=100, order="desc")
def list_batches(*, page: Page) -> Response[Any]:
    found = batches.list_running(http.rt(), http.org_id(), page=page)
    return http.json_reply(200, [letta.batch_json(b) for b in found])


@router.get("/messages/batches/<batch_id>")
def retrieve_batch(batch_id: BatchId) -> Response[Any]:
    return http.json_reply(
        200, letta.batch_json(batches.retrieve(http.rt(), http.org_id(), batch_id))
    )


@router.patch("/messages/batches/<batch_id>/cancel")
def cancel_batch(batch_id: BatchId) -> Response[Any]:
    batches.cancel(http.rt(), http.org_id(), batch_id)
    return http.json_reply(200, None)


@router.get("/messages/batches/<batch_id>/messages")
@paged(limit=100, order="desc")
def list_batch_messages(
    batch_id: BatchId,
    agent_id: AgentFilter = None,
    *,
    page: Page,
) -> Response[Any]:
    found = batches.messages(
        http.rt(),
        http.org_id(),
        batch_id,
        agent_id=agent_id,
        page=page,
    )
    return http.json_reply(200, {"messages": [letta.message_json(m) for m in found]})
