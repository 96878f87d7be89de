"""Groups: the sleeptime groups Cairn builds, to read and to tune (contract §10)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.params import After, AgentId, Before, GroupId, Limit, Order
from cairn.services import groups
from cairn.services.requests import GroupUpdate

router = APIGatewayHttpRouter()


@router.get("/groups/")
def list_groups(
    manager_type: str | None = None,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
    order: Order = "asc",
) -> Response[Any]:
    found = groups.list_groups(
        http.rt(),
        http.org_id(),
        manager_type=manager_type,
        after=after,
        before=before,
        limit=limit,
        order=order,
    )
    return http.json_reply(200, [letta.group_json(g) for g in found])


@router.get("/groups/count")
def count_groups() -> Response[Any]:
    return http.json_reply(200, groups.count(http.rt(), http.org_id()))


@router.get("/agents/<agent_id>/groups")
def agent_groups(
    agent_id: AgentId,
    manager_type: str | None = None,
    after: After = None,
    before: Before = None,
    limit: Limit = 50,
    order: Order = "asc",
) -> Response[Any]:
    found = groups.list_groups(
        http.rt(),
        http.org_id(),
        manager_type=manager_type,
        agent_id=agent_id,
        after=after,
        before=before,
        limit=limit,
        order=order,
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
