"""Folders and, under their older name, sources: both of Letta's route families (each with
its own parameter names: `folder_id`, `source_id`) over one service.

Files (upload, list, delete) and the agents' file routes come with the document processing
(issue 36)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.params import After, AgentId, Before, FolderId, Limit, Order
from cairn.domain.folders import Folder
from cairn.services import folders
from cairn.services.requests import FolderCreate, FolderUpdate

router = APIGatewayHttpRouter()


def _shown(folder: Folder) -> dict[str, Any]:
    """A Folder, or a Source on the routes of that name (Letta's shapes differ by a field)."""
    return letta.folder_json(folder, source="/sources" in http.current().raw_path)


@router.get("/folders/count")
@router.get("/sources/count")
def count_folders() -> Response[Any]:
    return http.json_reply(200, folders.count(http.rt(), http.org_id()))


@router.get("/folders/metadata")
@router.get("/sources/metadata")
def folders_metadata(include_detailed_per_source_metadata: bool = False) -> Response[Any]:
    stats = folders.metadata(http.rt(), http.org_id(),
                             detailed=include_detailed_per_source_metadata)  # fmt: skip
    return http.json_reply(200, stats)


@router.get("/folders/name/<folder_name>")
def folder_by_name(folder_name: str) -> Response[Any]:
    return http.json_reply(200, folders.id_by_name(http.rt(), http.org_id(), folder_name))


@router.get("/sources/name/<source_name>")
def source_by_name(source_name: str) -> Response[Any]:
    return folder_by_name(source_name)


@router.get("/folders/")
@router.get("/sources/")
def list_folders(
    name: str | None = None, after: After = None, before: Before = None, limit: Limit = 50,
    order: Order = "asc",
) -> Response[Any]:  # fmt: skip
    found = folders.list_folders(http.rt(), http.org_id(), name=name, after=after,
                                 before=before, limit=limit, order=order)  # fmt: skip
    return http.json_reply(200, [_shown(f) for f in found])


@router.post("/folders/")
@router.post("/sources/")
def create_folder(req: Annotated[FolderCreate, Body()]) -> Response[Any]:
    folder = folders.create(http.rt(), http.org_id(), req)
    return http.json_reply(200, _shown(folder))


@router.get("/folders/<folder_id>")
def retrieve_folder(folder_id: FolderId) -> Response[Any]:
    folder = folders.retrieve(http.rt(), http.org_id(), folder_id)
    return http.json_reply(200, _shown(folder))


@router.get("/sources/<source_id>")
def retrieve_source(source_id: FolderId) -> Response[Any]:
    return retrieve_folder(source_id)


@router.patch("/folders/<folder_id>")
def modify_folder(folder_id: FolderId, req: Annotated[FolderUpdate, Body()]) -> Response[Any]:
    folder = folders.modify(http.rt(), http.org_id(), folder_id, req)
    return http.json_reply(200, _shown(folder))


@router.patch("/sources/<source_id>")
def modify_source(source_id: FolderId, req: Annotated[FolderUpdate, Body()]) -> Response[Any]:
    return modify_folder(source_id, req)


@router.delete("/folders/<folder_id>")
def delete_folder(folder_id: FolderId) -> Response[Any]:
    folders.delete(http.rt(), http.org_id(), folder_id)
    return http.json_reply(200, None)


@router.delete("/sources/<source_id>")
def delete_source(source_id: FolderId) -> Response[Any]:
    return delete_folder(source_id)


@router.get("/folders/<folder_id>/agents")
def folder_agents(
    folder_id: FolderId, after: After = None, before: Before = None, limit: Limit = 50,
    order: Order = "desc",
) -> Response[Any]:  # fmt: skip
    found = folders.agent_ids(http.rt(), http.org_id(), folder_id, after=after, before=before,
                              limit=limit, order=order)  # fmt: skip
    return http.json_reply(200, found)


@router.get("/sources/<source_id>/agents")
def source_agents(source_id: FolderId) -> Response[Any]:
    # Letta's sources route pages nothing: every agent of the source.
    found = folders.agent_ids(http.rt(), http.org_id(), source_id, after=None, before=None,
                              limit=10_000, order="desc")  # fmt: skip
    return http.json_reply(200, found)


@router.get("/agents/<agent_id>/folders")
@router.get("/agents/<agent_id>/sources")
def agent_folders(
    agent_id: AgentId, after: After = None, before: Before = None, limit: Limit = 50,
    order: Order = "desc",
) -> Response[Any]:  # fmt: skip
    found = folders.of_agent(http.rt(), http.org_id(), agent_id, after=after, before=before,
                             limit=limit, order=order)  # fmt: skip
    return http.json_reply(200, [_shown(f) for f in found])


def _attached(agent_id: str, folder_id: str, *, on: bool) -> Response[Any]:
    view = folders.attach(http.rt(), http.org_id(), agent_id, folder_id, on=on)
    return http.json_reply(200, letta.view_json(view))


@router.patch("/agents/<agent_id>/folders/attach/<folder_id>")
def attach_folder(agent_id: AgentId, folder_id: FolderId) -> Response[Any]:
    return _attached(agent_id, folder_id, on=True)


@router.patch("/agents/<agent_id>/sources/attach/<source_id>")
def attach_source(agent_id: AgentId, source_id: FolderId) -> Response[Any]:
    return _attached(agent_id, source_id, on=True)


@router.patch("/agents/<agent_id>/folders/detach/<folder_id>")
def detach_folder(agent_id: AgentId, folder_id: FolderId) -> Response[Any]:
    return _attached(agent_id, folder_id, on=False)


@router.patch("/agents/<agent_id>/sources/detach/<source_id>")
def detach_source(agent_id: AgentId, source_id: FolderId) -> Response[Any]:
    return _attached(agent_id, source_id, on=False)
