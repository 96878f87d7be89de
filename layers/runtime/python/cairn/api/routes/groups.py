"""Groups: sleeptime groups and Letta's multi-agent groups."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta, streaming
from cairn.api.paging import paged
from cairn.api.params import AgentId, BlockId, GroupId, MessageId
from cairn.domain.groups import ManagerType
from cairn.domain.runs import Usage
from cairn.services import groups
from cairn.services.pages import Page
from cairn.services.requests import GroupCreate, GroupUpdate, LettaRequest, MessageUpdate

router = APIGatewayHttpRouter()


@router.get("/groups/")
@paged(limit=50, order="asc")
def list_groups(
    manager_type: ManagerType | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = groups.list_groups(
        http.rt(),
        http.org_id(),
        manager_type=manager_type,
        page=page,
    )
    return http.json_reply(200, [letta.group_json(g) for g in found])


@router.get("/groups/count")
def count_groups() -> Response[Any]:
    return http.json_reply(200, groups.count(http.rt(), http.org_id()))


@router.get("/agents/<agent_id>/groups")
@paged(limit=50, order="asc")
def agent_groups(
    agent_id: AgentId,
    manager_type: ManagerType | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = groups.list_groups(
        http.rt(),
        http.org_id(),
        manager_type=manager_type,
        agent_id=agent_id,
        page=page,
    )
    return http.json_reply(200, [letta.group_json(g) for g in found])


@router.get("/groups/<group_id>")
def get_group(group_id: GroupId) -> Response[Any]:
    return http.json_reply(
        200, letta.group_json(groups.retrieve(http.rt(), http.org_id(), group_id))
    )


@router.patch("/groups/<group_id>")
def update_group(group_id: GroupId, req: Annotated[GroupUpdate, Body()]) -> Response[Any]:
    group = groups.modify(http.rt(), http.org_id(), group_id, req)
    return http.json_reply(200, letta.group_json(group))


@router.post("/groups/")
def create_group(req: Annotated[GroupCreate, Body()]) -> Response[Any]:
    return http.json_reply(200, letta.group_json(groups.create(http.rt(), http.org_id(), req)))


@router.delete("/groups/<group_id>")
def delete_group(group_id: GroupId) -> Response[Any]:
    groups.delete(http.rt(), http.org_id(), group_id)
    return http.json_reply(200, {"message": f"Group id={group_id} successfully deleted"})


@router.patch("/groups/<group_id>/blocks/attach/<block_id>")
def attach_block(group_id: GroupId, block_id: BlockId) -> Response[Any]:
    groups.share_block(http.rt(), http.org_id(), group_id, block_id, attach=True)
    return http.json_reply(200, None)


@router.patch("/groups/<group_id>/blocks/detach/<block_id>")
def detach_block(group_id: GroupId, block_id: BlockId) -> Response[Any]:
    groups.share_block(http.rt(), http.org_id(), group_id, block_id, attach=False)
    return http.json_reply(200, None)


def _sent(group_id: str, req: LettaRequest) -> tuple[groups.GroupSent, dict[str, Any]]:
    sent = groups.send(http.rt(), http.org_id(), group_id, req, wait=True)
    usage = sum((r.usage for r in sent.runs), Usage())
    last = sent.runs[-1]
    return sent, letta.response_json(
        sent.messages, last.stop_reason, letta.usage_json(last, usage), req
    )


@router.post("/groups/<group_id>/messages")
def send_group_message(group_id: GroupId, req: Annotated[LettaRequest, Body()]) -> Response[Any]:
    """Every turn's messages; past the sync budget, 202 and the run of the turn under way
    (the turns left go on in the background), as an agent's send does."""
    sent, reply = _sent(group_id, req)
    if not sent.done:
        return http.json_reply(202, letta.run_json(sent.runs[-1]))
    return http.json_reply(200, reply)


@router.post("/groups/<group_id>/messages/stream")
def stream_group_message(group_id: GroupId, req: Annotated[LettaRequest, Body()]) -> Response[Any]:
    """Each turn's messages as its steps commit, then the last turn's stop reason and the
    chain's usage (`stream_tokens` is taken; a group's turns run on the queue, so their
    answers come whole per step)."""
    run, events = groups.stream(http.rt(), http.org_id(), group_id, req)
    letta_sse = streaming.Letta(
        run.id,
        use_assistant_message=req.use_assistant_message,
        only=req.include_return_message_types,
    )
    return http.stream_reply(letta_sse.frames(events))


@router.get("/groups/<group_id>/messages")
@paged(limit=10, order="desc")
def list_group_messages(
    group_id: GroupId,
    use_assistant_message: bool = True,
    *,
    page: Page,
) -> Response[Any]:
    rows = groups.history(
        http.rt(),
        http.org_id(),
        group_id,
        page=page,
    )
    return http.json_reply(200, letta.expand(rows, use_assistant_message=use_assistant_message))


@router.patch("/groups/<group_id>/messages/<message_id>")
def edit_group_message(
    group_id: GroupId, message_id: MessageId, req: Annotated[MessageUpdate, Body()]
) -> Response[Any]:
    edited = groups.edit_message(http.rt(), http.org_id(), group_id, message_id, req)
    return http.json_reply(200, letta.edited_json(edited, req.message_type))


@router.patch("/groups/<group_id>/reset-messages")
def reset_group_messages(group_id: GroupId) -> Response[Any]:
    groups.reset_messages(http.rt(), http.org_id(), group_id)
    return http.json_reply(200, None)
