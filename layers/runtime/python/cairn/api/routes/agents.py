"""Agents: create, list, count, retrieve, modify, delete, reset, context."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import AgentId
from cairn.api.relations import relations_wanted
from cairn.domain.agents import AgentFilter, StopReason
from cairn.services import agents
from cairn.services.pages import Page
from cairn.services.requests import CreateAgent, ResetMessages, UpdateAgent

router = APIGatewayHttpRouter()


@router.post("/agents/")
def create_agent(req: Annotated[CreateAgent, Body()]) -> Response[Any]:
    view = agents.create(http.rt(), http.org_id(), req)
    return http.json_reply(200, letta.view_json(view))


@router.get("/agents/")
@paged(limit=50, order="desc")
def list_agents(
    name: str | None = None,
    query_text: str | None = None,
    tags: Annotated[list[str] | None, Query()] = None,
    match_all_tags: bool = False,
    identity_id: str | None = None,
    identifier_keys: Annotated[list[str] | None, Query()] = None,
    last_stop_reason: StopReason | None = None,
    include: Annotated[list[str] | None, Query()] = None,
    *,
    page: Page,
) -> Response[Any]:
    where = AgentFilter(
        name, query_text, tags, match_all_tags, identity_id, identifier_keys, last_stop_reason
    )
    found = agents.list_agents(
        http.rt(),
        http.org_id(),
        where,
        page=page,
        relations=relations_wanted(include),
    )
    return http.json_reply(200, [letta.view_json(v) for v in found])


@router.get("/agents/count")
def count_agents(
    name: str | None = None,
    query_text: str | None = None,
    tags: Annotated[list[str] | None, Query()] = None,
    match_all_tags: bool = False,
    identity_id: str | None = None,
    identifier_keys: Annotated[list[str] | None, Query()] = None,
    last_stop_reason: StopReason | None = None,
) -> Response[Any]:
    """The agents GET /v1/agents/ would list with the same filters."""
    where = AgentFilter(
        name, query_text, tags, match_all_tags, identity_id, identifier_keys, last_stop_reason
    )
    return http.json_reply(200, agents.count(http.rt(), http.org_id(), where))


@router.get("/agents/<agent_id>")
def retrieve_agent(
    agent_id: AgentId, include: Annotated[list[str] | None, Query()] = None
) -> Response[Any]:
    view = agents.retrieve(http.rt(), http.org_id(), agent_id, relations=relations_wanted(include))
    return http.json_reply(200, letta.view_json(view))


@router.patch("/agents/<agent_id>")
def modify_agent(agent_id: AgentId, req: Annotated[UpdateAgent, Body()]) -> Response[Any]:
    view = agents.modify(http.rt(), http.org_id(), agent_id, req)
    return http.json_reply(200, letta.view_json(view))


@router.delete("/agents/<agent_id>")
def delete_agent(agent_id: AgentId) -> Response[Any]:
    agents.delete(http.rt(), http.org_id(), agent_id)
    return http.json_reply(200, {"message": f"Agent id={agent_id} successfully deleted"})


@router.patch("/agents/<agent_id>/reset-messages")
def reset_messages(
    agent_id: AgentId, req: Annotated[ResetMessages | None, Body()] = None
) -> Response[Any]:
    add = req.add_default_initial_messages if req else False
    view = agents.reset_messages(http.rt(), http.org_id(), agent_id, add_defaults=add)
    return http.json_reply(200, None if http.sdk_1x() else letta.view_json(view))


@router.get("/agents/<agent_id>/context")
def context_window(agent_id: AgentId) -> Response[Any]:
    return http.json_reply(
        200, letta.context_json(agents.context_overview(http.rt(), http.org_id(), agent_id))
    )


@router.get("/tags/")
@paged(limit=50, order="asc")
def list_tags(
    name: str | None = None,
    query_text: str | None = None,  # Letta's older name for `name`
    *,
    page: Page,
) -> Response[Any]:
    found = agents.tags(
        http.rt(),
        http.org_id(),
        query_text=name or query_text,
        page=page,
    )
    return http.json_reply(200, found)
