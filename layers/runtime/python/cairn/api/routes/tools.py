"""Tools: the organisation's list, an agent's tools and their approval switch; models."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.paging import paged
from cairn.api.params import AgentId, ToolId
from cairn.domain.providers import ProviderType
from cairn.domain.tools import ToolFilter
from cairn.llm.catalog import embedding_models
from cairn.services import providers, tool_generation, tools
from cairn.services.pages import Page
from cairn.services.requests import (
    ApprovalToggle,
    CodeInput,
    GenerateToolInput,
    ToolCreate,
    ToolRun,
    ToolRunFromSource,
    ToolSearch,
    ToolUpdate,
)

router = APIGatewayHttpRouter()


@router.get("/tools/")
@paged(limit=50, order="desc")
def list_tools(
    name: str | None = None,
    names: Annotated[list[str] | None, Query()] = None,
    tool_ids: Annotated[list[str] | None, Query()] = None,
    search: str | None = None,
    tool_types: Annotated[list[str] | None, Query()] = None,
    exclude_tool_types: Annotated[list[str] | None, Query()] = None,
    return_only_letta_tools: bool = False,
    *,
    page: Page,
) -> Response[Any]:
    where = ToolFilter(
        name,
        names,
        _split(tool_ids),
        search,
        _split(tool_types),
        _split(exclude_tool_types),
        only_letta=return_only_letta_tools,
    )
    found = tools.list_tools(
        http.rt(),
        http.org_id(),
        where,
        page=page,
    )
    return http.json_reply(200, [letta.tool_json(t) for t in found])


def _split(values: list[str] | None) -> list[str] | None:
    """Repeated parameters or comma-separated values, as Letta takes them."""
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@router.post("/tools/add-base-tools")
def add_base_tools() -> Response[Any]:
    found = tools.add_builtins(http.rt(), http.org_id())
    return http.json_reply(200, [letta.tool_json(t) for t in found])


@router.post("/tools/search")
def search_tools(req: Annotated[ToolSearch, Body()]) -> Response[Any]:
    found = tools.search(http.rt(), http.org_id(), req)
    return http.json_reply(
        200,
        [
            {
                "tool": letta.tool_json(tool),
                "embedded_text": None,
                "fts_rank": rank,
                "vector_rank": None,
                "combined_score": score,
            }
            for tool, rank, score in found
        ],
    )


@router.get("/tools/count")
def count_tools(
    name: str | None = None,
    names: Annotated[list[str] | None, Query()] = None,
    tool_ids: Annotated[list[str] | None, Query()] = None,
    search: str | None = None,
    tool_types: Annotated[list[str] | None, Query()] = None,
    exclude_tool_types: Annotated[list[str] | None, Query()] = None,
    return_only_letta_tools: bool = False,
    exclude_letta_tools: bool = False,
) -> Response[Any]:
    """The tools GET /v1/tools/ would list with the same filters."""
    where = ToolFilter(
        name,
        names,
        _split(tool_ids),
        search,
        _split(tool_types),
        _split(exclude_tool_types),
        return_only_letta_tools,
        exclude_letta_tools,
    )
    return http.json_reply(200, tools.count(http.rt(), http.org_id(), where))


@router.post("/tools/")
def create_tool(req: Annotated[ToolCreate, Body()]) -> Response[Any]:
    return http.json_reply(200, letta.tool_json(tools.upsert(http.rt(), http.org_id(), req)))


@router.put("/tools/")
def upsert_tool(req: Annotated[ToolCreate, Body()]) -> Response[Any]:
    return http.json_reply(200, letta.tool_json(tools.upsert(http.rt(), http.org_id(), req)))


@router.get("/tools/<tool_id>")
def get_tool(tool_id: ToolId) -> Response[Any]:
    return http.json_reply(200, letta.tool_json(tools.retrieve(http.rt(), http.org_id(), tool_id)))


@router.patch("/tools/<tool_id>")
def modify_tool(tool_id: ToolId, req: Annotated[ToolUpdate, Body()]) -> Response[Any]:
    return http.json_reply(
        200, letta.tool_json(tools.modify(http.rt(), http.org_id(), tool_id, req))
    )


@router.post("/tools/generate-schema")
def generate_schema(req: Annotated[CodeInput, Body()]) -> Response[Any]:
    return http.json_reply(200, tools.generate_schema(req.code, req.source_type))


@router.post("/tools/generate-tool")
def generate_tool(req: Annotated[GenerateToolInput, Body()]) -> Response[Any]:
    made = tool_generation.generate(http.rt(), http.org_id(), req)
    return http.json_reply(
        200,
        {
            "tool": letta.tool_json(made.tool),
            "sample_args": made.sample_args,
            "response": made.response,
        },
    )


@router.post("/tools/run")
def run_tool_from_source(req: Annotated[ToolRunFromSource, Body()]) -> Response[Any]:
    name, result = tools.run_source(http.rt(), http.org_id(), req)
    return http.json_reply(200, letta.tool_return_json(name, result))


@router.post("/agents/<agent_id>/tools/<tool_name>/run")
def run_agent_tool(
    agent_id: AgentId, tool_name: str, req: Annotated[ToolRun | None, Body()] = None
) -> Response[Any]:
    args = req.args if req is not None else {}
    done = tools.run_for_agent(http.rt(), http.org_id(), agent_id, tool_name, args)
    shown = letta.execution_json(done)
    if not done.success:  # as Letta's route: no result for a failed call; why, in stderr
        shown |= {"func_return": None, "stderr": [*done.stderr, done.value]}
    return http.json_reply(200, shown)


@router.delete("/tools/<tool_id>")
def delete_tool(tool_id: ToolId) -> Response[Any]:
    tools.delete(http.rt(), http.org_id(), tool_id)
    return http.json_reply(200, None)


@router.get("/agents/<agent_id>/tools")
@paged(limit=None, order="asc")
def agent_tools(
    agent_id: AgentId,
    *,
    page: Page,
) -> Response[Any]:
    found = tools.of_agent(
        http.rt(),
        http.org_id(),
        agent_id,
        page=page,
    )
    return http.json_reply(200, [letta.tool_json(t) for t in found])


@router.patch("/agents/<agent_id>/tools/attach/<tool_id>")
def attach_tool(agent_id: AgentId, tool_id: ToolId) -> Response[Any]:
    view = tools.attach(http.rt(), http.org_id(), agent_id, tool_id, attach=True)
    return http.json_reply(200, None if http.sdk_1x() else letta.view_json(view))


@router.patch("/agents/<agent_id>/tools/detach/<tool_id>")
def detach_tool(agent_id: AgentId, tool_id: ToolId) -> Response[Any]:
    view = tools.attach(http.rt(), http.org_id(), agent_id, tool_id, attach=False)
    return http.json_reply(200, None if http.sdk_1x() else letta.view_json(view))


@router.patch("/agents/<agent_id>/tools/approval/<tool_name>")
def tool_approval(
    agent_id: AgentId,
    tool_name: str,
    req: Annotated[ApprovalToggle | None, Body()] = None,
    requires_approval: bool = True,
) -> Response[Any]:
    # The 1.x SDKs send the switch in the body; older clients as a query parameter.
    wanted = req.requires_approval if req is not None else requires_approval
    view = tools.set_approval(http.rt(), http.org_id(), agent_id, tool_name, required=wanted)
    return http.json_reply(200, None if http.sdk_1x() else letta.view_json(view))


@router.get("/models/")
def list_models(
    provider_category: Annotated[list[Literal["base", "byok"]] | None, Query()] = None,
    provider_name: str | None = None,
    provider_type: ProviderType | None = None,
) -> Response[Any]:
    found = providers.models(
        http.rt(),
        http.org_id(),
        categories=provider_category,
        name=provider_name,
        kind=provider_type,
    )
    return http.json_reply(200, [letta.model_json(m) for m in found])


@router.get("/models/embedding")
def list_embedding_models() -> Response[Any]:
    found = embedding_models(http.rt().settings)
    return http.json_reply(200, [letta.embedding_model_json(m) for m in found])
