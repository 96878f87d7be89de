"""Identities: who an application's agents and blocks belong to (Letta's identities)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import AgentId, BlockId, IdentityId
from cairn.api.relations import relations_wanted
from cairn.domain.agents import AgentFilter
from cairn.domain.identities import IdentityProperty, IdentityType
from cairn.services import agents, blocks, identities
from cairn.services.pages import Page
from cairn.services.requests import IdentityCreate, IdentityUpdate, IdentityUpsert

router = APIGatewayHttpRouter()


@router.get("/identities/")
@paged(limit=50, order="desc")
def list_identities(
    name: str | None = None,
    project_id: str | None = None,
    identifier_key: str | None = None,
    identity_type: IdentityType | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = identities.list_identities(
        http.rt(),
        http.org_id(),
        name=name,
        identifier_key=identifier_key,
        identity_type=identity_type,
        project_id=project_id,
        page=page,
    )
    return http.json_reply(200, [letta.identity_json(i) for i in found])


@router.post("/identities/")
def create_identity(req: Annotated[IdentityCreate, Body()]) -> Response[Any]:
    made = identities.create(http.rt(), http.org_id(), req)
    return http.json_reply(200, letta.identity_json(made))


@router.put("/identities/")
def upsert_identity(req: Annotated[IdentityUpsert, Body()]) -> Response[Any]:
    kept = identities.upsert(http.rt(), http.org_id(), req)
    return http.json_reply(200, letta.identity_json(kept))


@router.get("/identities/count")
def count_identities() -> Response[Any]:
    return http.json_reply(200, identities.count(http.rt(), http.org_id()))


@router.get("/identities/<identity_id>")
def retrieve_identity(identity_id: IdentityId) -> Response[Any]:
    found = identities.retrieve(http.rt(), http.org_id(), identity_id)
    return http.json_reply(200, letta.identity_json(found))


@router.patch("/identities/<identity_id>")
def modify_identity(
    identity_id: IdentityId, req: Annotated[IdentityUpdate, Body()]
) -> Response[Any]:
    changed = identities.modify(http.rt(), http.org_id(), identity_id, req)
    return http.json_reply(200, letta.identity_json(changed))


@router.put("/identities/<identity_id>/properties")
def upsert_properties(
    identity_id: IdentityId, properties: Annotated[list[IdentityProperty], Body()]
) -> Response[Any]:
    changed = identities.set_properties(http.rt(), http.org_id(), identity_id, properties)
    return http.json_reply(200, letta.identity_json(changed))


@router.delete("/identities/<identity_id>")
def delete_identity(identity_id: IdentityId) -> Response[Any]:
    identities.delete(http.rt(), http.org_id(), identity_id)
    return http.json_reply(200, None)


@router.get("/identities/<identity_id>/agents")
@paged(limit=50, order="desc")
def identity_agents(
    identity_id: IdentityId,
    include: Annotated[list[str] | None, Query()] = None,
    *,
    page: Page,
) -> Response[Any]:
    identities.retrieve(http.rt(), http.org_id(), identity_id)  # 404 for an unknown one
    found = agents.list_agents(
        http.rt(),
        http.org_id(),
        AgentFilter(identity_id=identity_id),
        page=page,
        relations=relations_wanted(include),
    )
    return http.json_reply(200, [letta.view_json(v) for v in found])


@router.get("/identities/<identity_id>/blocks")
@paged(limit=50, order="desc")
def identity_blocks(
    identity_id: IdentityId,
    *,
    page: Page,
) -> Response[Any]:
    found = identities.blocks_of(
        http.rt(),
        http.org_id(),
        identity_id,
        page=page,
    )
    return http.json_reply(200, [letta.block_json(b) for b in found])


@router.patch("/agents/<agent_id>/identities/attach/<identity_id>")
def attach_agent(agent_id: AgentId, identity_id: IdentityId) -> Response[Any]:
    return _agent_link(agent_id, identity_id, on=True)


@router.patch("/agents/<agent_id>/identities/detach/<identity_id>")
def detach_agent(agent_id: AgentId, identity_id: IdentityId) -> Response[Any]:
    return _agent_link(agent_id, identity_id, on=False)


@router.patch("/blocks/<block_id>/identities/attach/<identity_id>")
def attach_block(block_id: BlockId, identity_id: IdentityId) -> Response[Any]:
    return _block_link(block_id, identity_id, on=True)


@router.patch("/blocks/<block_id>/identities/detach/<identity_id>")
def detach_block(block_id: BlockId, identity_id: IdentityId) -> Response[Any]:
    return _block_link(block_id, identity_id, on=False)


def _agent_link(agent_id: str, identity_id: str, *, on: bool) -> Response[Any]:
    agents.retrieve(http.rt(), http.org_id(), agent_id, relations=False)  # 404 names it
    identities.link(http.rt(), http.org_id(), identity_id, "agent", agent_id, on=on)
    return http.json_reply(200, None)


def _block_link(block_id: str, identity_id: str, *, on: bool) -> Response[Any]:
    block = blocks.retrieve(http.rt(), http.org_id(), block_id)  # 404 names it
    identities.link(http.rt(), http.org_id(), identity_id, "block", block_id, on=on)
    return http.json_reply(200, letta.block_json(block))
