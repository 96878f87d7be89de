"""Archives: create, list, modify, delete, their passages and agents; global passage search."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import AgentId, ArchiveId, PassageId
from cairn.services import archives
from cairn.services.pages import Page
from cairn.services.requests import (
    ArchiveCreate,
    ArchivePassageCreate,
    ArchiveUpdate,
    PassageSearch,
)

router = APIGatewayHttpRouter()


@router.post("/archives/")
def create_archive(req: Annotated[ArchiveCreate, Body()]) -> Response[Any]:
    return http.json_reply(200, letta.archive_json(archives.create(http.rt(), http.org_id(), req)))


@router.get("/archives/")
@paged(limit=50, order="desc")
def list_archives(
    name: str | None = None,
    agent_id: str | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = archives.list_archives(
        http.rt(),
        http.org_id(),
        name=name,
        agent_id=agent_id,
        page=page,
    )
    return http.json_reply(200, [letta.archive_json(a) for a in found])


@router.get("/archives/<archive_id>")
def get_archive(archive_id: ArchiveId) -> Response[Any]:
    archive = archives.retrieve(http.rt(), http.org_id(), archive_id)
    return http.json_reply(200, letta.archive_json(archive))


@router.patch("/archives/<archive_id>")
def modify_archive(archive_id: ArchiveId, req: Annotated[ArchiveUpdate, Body()]) -> Response[Any]:
    archive = archives.modify(http.rt(), http.org_id(), archive_id, req)
    return http.json_reply(200, letta.archive_json(archive))


@router.delete("/archives/<archive_id>")
def delete_archive(archive_id: ArchiveId) -> Response[Any]:
    archive = archives.delete(http.rt(), http.org_id(), archive_id)
    return http.json_reply(200, letta.archive_json(archive))


@router.get("/archives/<archive_id>/agents")
def archive_agents(archive_id: ArchiveId) -> Response[Any]:
    found = archives.agents_of(http.rt(), http.org_id(), archive_id)
    return http.json_reply(200, [letta.view_json(v) for v in found])


@router.post("/archives/<archive_id>/passages")
def add_passage(
    archive_id: ArchiveId, req: Annotated[ArchivePassageCreate, Body()]
) -> Response[Any]:
    passage = archives.add_passage(http.rt(), http.org_id(), archive_id, req)
    return http.json_reply(200, letta.passage_json(passage))


@router.delete("/archives/<archive_id>/passages/<passage_id>")
def delete_passage(archive_id: ArchiveId, passage_id: PassageId) -> Response[Any]:
    archives.delete_passage(http.rt(), http.org_id(), archive_id, passage_id)
    return http.json_reply(200, None)


@router.patch("/agents/<agent_id>/archives/attach/<archive_id>")
def attach_archive(agent_id: AgentId, archive_id: ArchiveId) -> Response[Any]:
    archives.attach(http.rt(), http.org_id(), agent_id, archive_id)
    return http.json_reply(200, None)


@router.patch("/agents/<agent_id>/archives/detach/<archive_id>")
def detach_archive(agent_id: AgentId, archive_id: ArchiveId) -> Response[Any]:
    archives.detach(http.rt(), http.org_id(), agent_id, archive_id)
    return http.json_reply(200, None)


@router.post("/passages/search")
def search_passages(req: Annotated[PassageSearch, Body()]) -> Response[Any]:
    found = archives.search_passages(http.rt(), http.org_id(), req)
    return http.json_reply(
        200,
        [
            {"passage": letta.passage_json(f.passage), "score": f.score, "metadata": {}}
            for f in found
        ],
    )
