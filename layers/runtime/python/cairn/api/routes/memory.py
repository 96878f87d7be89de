"""Core-memory blocks (agent view and global `/v1/blocks/`) and archival memory."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import After, AgentId, Before, BlockId, Limit, PassageId
from cairn.api.relations import relations_wanted
from cairn.domain.blocks import BlockSearch
from cairn.services import blocks, passages
from cairn.services.pages import Page
from cairn.services.requests import BlockUpdate, CreateBlock, CreatePassage

router = APIGatewayHttpRouter()


@router.get("/agents/<agent_id>/core-memory")
def core_memory(agent_id: AgentId) -> Response[Any]:
    """Letta's Memory object: the agent's blocks (the 1.x SDKs call it `core_memory`)."""
    found = blocks.of_agent(http.rt(), http.org_id(), agent_id)
    listed = [letta.block_json(b) for b in found]
    return http.json_reply(
        200, {"agent_type": None, "blocks": listed, "file_blocks": [], "prompt_template": ""}
    )


@router.get("/agents/<agent_id>/core-memory/blocks")
@paged(limit=None, order="asc")
def agent_blocks(
    agent_id: AgentId,
    *,
    page: Page,
) -> Response[Any]:
    found = blocks.of_agent(
        http.rt(),
        http.org_id(),
        agent_id,
        page=page,
    )
    return http.json_reply(200, [letta.block_json(b) for b in found])


@router.get("/agents/<agent_id>/core-memory/blocks/<block_label>")
def agent_block(agent_id: AgentId, block_label: str) -> Response[Any]:
    block = blocks.by_label(http.rt(), http.org_id(), agent_id, block_label)
    return http.json_reply(200, letta.block_json(block))


@router.patch("/agents/<agent_id>/core-memory/blocks/<block_label>")
def edit_agent_block(
    agent_id: AgentId, block_label: str, req: Annotated[BlockUpdate, Body()]
) -> Response[Any]:
    block = blocks.edit_by_label(http.rt(), http.org_id(), agent_id, block_label, req)
    return http.json_reply(200, letta.block_json(block))


@router.patch("/agents/<agent_id>/core-memory/blocks/attach/<block_id>")
def attach_block(agent_id: AgentId, block_id: BlockId) -> Response[Any]:
    view = blocks.attach(http.rt(), http.org_id(), agent_id, block_id, attach=True)
    return http.json_reply(200, letta.view_json(view))


@router.patch("/agents/<agent_id>/core-memory/blocks/detach/<block_id>")
def detach_block(agent_id: AgentId, block_id: BlockId) -> Response[Any]:
    view = blocks.attach(http.rt(), http.org_id(), agent_id, block_id, attach=False)
    return http.json_reply(200, letta.view_json(view))


# -- global blocks -----------------------------------------------------------------------


@router.post("/blocks/")
def create_block(req: Annotated[CreateBlock, Body()]) -> Response[Any]:
    return http.json_reply(200, letta.block_json(blocks.create(http.rt(), http.org_id(), req)))


@router.get("/blocks/")
@paged(limit=50, order="desc")
def list_blocks(
    label: str | None = None,
    identity_id: str | None = None,
    identifier_keys: Annotated[list[str] | None, Query()] = None,
    label_search: Annotated[str | None, Query(max_length=50)] = None,
    value_search: Annotated[str | None, Query(max_length=200)] = None,
    description_search: Annotated[str | None, Query(max_length=200)] = None,
    name: Annotated[str | None, Query(max_length=100)] = None,
    connected_to_agents_count_gt: int | None = None,
    connected_to_agents_count_lt: int | None = None,
    connected_to_agents_count_eq: Annotated[list[int] | None, Query()] = None,
    *,
    page: Page,
) -> Response[Any]:
    search = BlockSearch(
        label_search,
        value_search,
        description_search,
        name,
        connected_to_agents_count_gt,
        connected_to_agents_count_lt,
        connected_to_agents_count_eq,
        identity_id,
        identifier_keys,
    )
    found = blocks.list_blocks(
        http.rt(),
        http.org_id(),
        label=label,
        page=page,
        search=search,
    )
    return http.json_reply(200, [letta.block_json(b) for b in found])


@router.get("/blocks/count")
def count_blocks() -> Response[Any]:
    return http.json_reply(200, blocks.count(http.rt(), http.org_id()))


@router.get("/blocks/<block_id>")
def get_block(block_id: BlockId) -> Response[Any]:
    return http.json_reply(
        200, letta.block_json(blocks.retrieve(http.rt(), http.org_id(), block_id))
    )


@router.patch("/blocks/<block_id>")
def edit_block(block_id: BlockId, req: Annotated[BlockUpdate, Body()]) -> Response[Any]:
    block = blocks.edit(http.rt(), http.org_id(), block_id, req)
    return http.json_reply(200, letta.block_json(block))


@router.delete("/blocks/<block_id>")
def delete_block(block_id: BlockId) -> Response[Any]:
    blocks.delete(http.rt(), http.org_id(), block_id)
    return http.json_reply(200, None)


@router.get("/blocks/<block_id>/agents")
@paged(limit=None, order="asc")
def block_agents(
    block_id: BlockId,
    include: Annotated[list[str] | None, Query()] = None,
    *,
    page: Page,
) -> Response[Any]:
    found = blocks.agents_of(
        http.rt(),
        http.org_id(),
        block_id,
        page=page,
        relations=relations_wanted(include),
    )
    return http.json_reply(200, [letta.view_json(v) for v in found])


# -- archival memory ---------------------------------------------------------------------


@router.get("/agents/<agent_id>/archival-memory")
def list_passages(
    agent_id: AgentId,
    after: After = None,
    before: Before = None,
    limit: Limit = 100,
    ascending: bool = True,
    search: str | None = None,
) -> Response[Any]:
    found = passages.list_passages(
        http.rt(),
        http.org_id(),
        agent_id,
        page=Page(limit=limit, after=after, before=before, order="asc" if ascending else "desc"),
        search_text=search,
    )
    return http.json_reply(200, [letta.passage_json(p) for p in found])


@router.post("/agents/<agent_id>/archival-memory")
def create_passage(agent_id: AgentId, req: Annotated[CreatePassage, Body()]) -> Response[Any]:
    stored = passages.insert(http.rt(), http.org_id(), agent_id, req)
    return http.json_reply(200, [letta.passage_json(stored)])


@router.get("/agents/<agent_id>/archival-memory/search")
def search_passages(
    agent_id: AgentId,
    query: Annotated[str, Query(min_length=1)],
    tags: Annotated[list[str] | None, Query()] = None,
    tag_match_mode: Literal["any", "all"] = "any",
    top_k: Annotated[int, Query(ge=1, le=1000)] = 10,
    start_datetime: str | None = None,
    end_datetime: str | None = None,
) -> Response[Any]:
    found = passages.search_passages(
        http.rt(),
        http.org_id(),
        agent_id,
        query,
        tags=tags,
        match_all=tag_match_mode == "all",
        start=start_datetime,
        end=end_datetime,
        top_k=top_k,
    )
    results = [letta.search_result_json(f.passage, f.timezone) for f in found]
    return http.json_reply(200, {"results": results, "count": len(results)})


@router.delete("/agents/<agent_id>/archival-memory/<memory_id>")
def delete_passage(agent_id: AgentId, memory_id: PassageId) -> Response[Any]:
    passages.delete(http.rt(), http.org_id(), agent_id, memory_id)
    return http.json_reply(200, {"message": f"Memory id={memory_id} successfully deleted"})
