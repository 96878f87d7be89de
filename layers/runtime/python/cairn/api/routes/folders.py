"""Folders and, under their older name, sources: both of Letta's route families (each with
its own parameter names: `folder_id`, `source_id`) over one service; their files."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, File, UploadFile
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import After, AgentId, Before, FileId, FolderId, Limit, Order
from cairn.domain.folders import DuplicateHandling, Folder
from cairn.services import files, folders
from cairn.services.pages import Page
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
    stats = folders.metadata(
        http.rt(), http.org_id(), detailed=include_detailed_per_source_metadata
    )
    return http.json_reply(200, stats)


@router.get("/folders/name/<folder_name>")
def folder_by_name(folder_name: str) -> Response[Any]:
    return http.json_reply(200, folders.id_by_name(http.rt(), http.org_id(), folder_name))


@router.get("/sources/name/<source_name>")
def source_by_name(source_name: str) -> Response[Any]:
    return folder_by_name(source_name)


@router.get("/folders/")
@router.get("/sources/")
@paged(limit=50, order="asc")
def list_folders(
    name: str | None = None,
    *,
    page: Page,
) -> Response[Any]:
    found = folders.list_folders(
        http.rt(),
        http.org_id(),
        name=name,
        page=page,
    )
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
@paged(limit=50, order="desc")
def folder_agents(
    folder_id: FolderId,
    *,
    page: Page,
) -> Response[Any]:
    found = folders.agent_ids(
        http.rt(),
        http.org_id(),
        folder_id,
        page=page,
    )
    return http.json_reply(200, found)


@router.get("/sources/<source_id>/agents")
def source_agents(source_id: FolderId) -> Response[Any]:
    # Letta's sources route pages nothing: every agent of the source.
    found = folders.agent_ids(
        http.rt(),
        http.org_id(),
        source_id,
        page=Page(limit=10_000, after=None, before=None, order="desc"),
    )
    return http.json_reply(200, found)


@router.get("/agents/<agent_id>/folders")
@router.get("/agents/<agent_id>/sources")
@paged(limit=50, order="desc")
def agent_folders(
    agent_id: AgentId,
    *,
    page: Page,
) -> Response[Any]:
    found = folders.of_agent(
        http.rt(),
        http.org_id(),
        agent_id,
        page=page,
    )
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


# -- files ------------------------------------------------------------------------------


@router.post("/folders/<folder_id>/upload")
def upload_file_to_folder(
    folder_id: FolderId,
    file: Annotated[UploadFile, File()],
    duplicate_handling: DuplicateHandling = "suffix",
    name: str | None = None,
) -> Response[Any]:
    done = files.upload(
        http.rt(),
        http.org_id(),
        folder_id,
        file.content,
        filename=file.filename or "upload",
        content_type=file.content_type,
        duplicate_handling=duplicate_handling,
        name=name,
    )
    reply = http.json_reply(200, letta.file_json(done.file))
    if done.skipped:  # Letta's word that nothing was uploaded
        reply.headers["X-Upload-Result"] = "skipped"
    return reply


@router.post("/sources/<source_id>/upload")
def upload_file_to_source(
    source_id: FolderId,
    file: Annotated[UploadFile, File()],
    duplicate_handling: DuplicateHandling = "suffix",
    name: str | None = None,
) -> Response[Any]:
    return upload_file_to_folder(source_id, file, duplicate_handling, name)


@router.get("/folders/<folder_id>/files")
@paged(limit=1000, order="desc")
def list_folder_files(
    folder_id: FolderId,
    include_content: bool = False,
    *,
    page: Page,
) -> Response[Any]:
    found = files.list_files(
        http.rt(),
        http.org_id(),
        folder_id,
        page=page,
    )
    return http.json_reply(200, [_file(f, include_content) for f in found])


@router.get("/sources/<source_id>/files")
def list_source_files(
    source_id: FolderId,
    after: After = None,
    limit: Limit = 1000,
    include_content: bool = False,
) -> Response[Any]:
    page = Page(limit=limit, after=after, order="desc")  # Letta's older route: no order
    return list_folder_files(source_id, include_content, page=page)


@router.get("/sources/<source_id>/files/<file_id>")
def source_file(
    source_id: FolderId, file_id: FileId, include_content: bool = False
) -> Response[Any]:
    file = files.retrieve(http.rt(), http.org_id(), source_id, file_id)
    return http.json_reply(200, _file(file, include_content))


def _file(file: Any, include_content: bool) -> dict[str, Any]:
    text = files.content_of(http.rt(), http.org_id(), file.id) if include_content else None
    return letta.file_json(file, text)


@router.delete("/folders/<folder_id>/<file_id>")
def delete_folder_file(folder_id: FolderId, file_id: FileId) -> Response[Any]:
    files.delete(http.rt(), http.org_id(), file_id, folder_id)
    return Response(status_code=204, body="")


@router.delete("/sources/<source_id>/<file_id>")
def delete_source_file(source_id: FolderId, file_id: FileId) -> Response[Any]:
    return delete_folder_file(source_id, file_id)


@router.get("/folders/<folder_id>/passages")
@paged(limit=100, order="desc")
def folder_passages(
    folder_id: FolderId,
    *,
    page: Page,
) -> Response[Any]:
    found = files.passages(
        http.rt(),
        http.org_id(),
        folder_id,
        page=page,
    )
    return http.json_reply(200, [letta.file_passage_json(p) for p in found])


@router.get("/sources/<source_id>/passages")
def source_passages(
    source_id: FolderId,
    after: After = None,
    before: Before = None,
    limit: Limit = 100,
) -> Response[Any]:
    return folder_passages(
        source_id, page=Page(limit=limit, after=after, before=before, order="desc")
    )


# -- an agent's files -------------------------------------------------------------------


@router.get("/agents/<agent_id>/files")
def agent_files(
    agent_id: AgentId,
    after: After = None,
    before: Before = None,
    limit: Limit = 100,
    order: Order = "desc",
    cursor: str | None = None,
    is_open: bool | None = None,
) -> Response[Any]:
    found, more = files.agent_files(
        http.rt(),
        http.org_id(),
        agent_id,
        is_open=is_open,
        page=Page(limit=limit, after=after or cursor, before=before, order=order),
    )
    shown = [letta.agent_file_json(f.id, f.view, f.folder_name) for f in found]
    return http.json_reply(
        200, {"files": shown, "next_cursor": found[-1].id if more else None, "has_more": more}
    )


@router.patch("/agents/<agent_id>/files/close-all")
def close_all_files(agent_id: AgentId) -> Response[Any]:
    return http.json_reply(200, files.close_for_agent(http.rt(), http.org_id(), agent_id, None))


@router.patch("/agents/<agent_id>/files/<file_id>/open")
def open_agent_file(agent_id: AgentId, file_id: FileId) -> Response[Any]:
    return http.json_reply(200, files.open_for_agent(http.rt(), http.org_id(), agent_id, file_id))


@router.patch("/agents/<agent_id>/files/<file_id>/close")
def close_agent_file(agent_id: AgentId, file_id: FileId) -> Response[Any]:
    files.close_for_agent(http.rt(), http.org_id(), agent_id, file_id)
    return http.json_reply(200, {"message": f"File id={file_id} successfully closed"})
