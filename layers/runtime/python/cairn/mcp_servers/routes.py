"""Organizations' MCP servers (Letta's /v1/mcp-servers)."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.mcp_servers import connect, service, shapes
from cairn.mcp_servers.oauth import record_callback
from cairn.mcp_servers.requests import McpServerCreate, McpServerUpdate, McpToolRun

router = APIGatewayHttpRouter()


@router.post("/mcp-servers/")
def mcp_create_mcp_server(req: Annotated[McpServerCreate, Body()]) -> Response[Any]:
    made = service.create(http.rt(), http.org_id(), req)
    return http.json_reply(200, shapes.mcp_server_json(made))


@router.get("/mcp-servers/")
def mcp_list_mcp_servers() -> Response[Any]:
    found = service.list_servers(http.rt(), http.org_id())
    return http.json_reply(200, [shapes.mcp_server_json(s) for s in found])


@router.get("/mcp-servers/<mcp_server_id>")
def mcp_retrieve_mcp_server(mcp_server_id: str) -> Response[Any]:
    found = service.retrieve(http.rt(), http.org_id(), mcp_server_id)
    return http.json_reply(200, shapes.mcp_server_json(found))


@router.patch("/mcp-servers/<mcp_server_id>")
def mcp_update_mcp_server(
    mcp_server_id: str, req: Annotated[McpServerUpdate, Body()]
) -> Response[Any]:
    changed = service.update(http.rt(), http.org_id(), mcp_server_id, req)
    return http.json_reply(200, shapes.mcp_server_json(changed))


@router.delete("/mcp-servers/<mcp_server_id>")
def mcp_delete_mcp_server(mcp_server_id: str) -> Response[Any]:
    service.delete(http.rt(), http.org_id(), mcp_server_id)
    return Response(status_code=204, body="")


@router.get("/mcp-servers/<mcp_server_id>/tools")
def mcp_list_tools_for_mcp_server(mcp_server_id: str) -> Response[Any]:
    found = service.tools_of(http.rt(), http.org_id(), mcp_server_id)
    return http.json_reply(200, [letta.tool_json(t) for t in found])


@router.get("/mcp-servers/<mcp_server_id>/tools/<tool_id>")
def mcp_retrieve_mcp_tool(mcp_server_id: str, tool_id: str) -> Response[Any]:
    found = service.tool_of(http.rt(), http.org_id(), mcp_server_id, tool_id)
    return http.json_reply(200, letta.tool_json(found))


@router.post("/mcp-servers/<mcp_server_id>/tools/<tool_id>/run")
def mcp_run_tool(
    mcp_server_id: str, tool_id: str, req: Annotated[McpToolRun, Body()]
) -> Response[Any]:
    done = service.run(http.rt(), http.org_id(), mcp_server_id, tool_id, req)
    return http.json_reply(200, done)


@router.patch("/mcp-servers/<mcp_server_id>/refresh")
def mcp_refresh_mcp_server_tools(
    mcp_server_id: str, agent_id: Annotated[str | None, Query()] = None
) -> Response[Any]:
    """The server's tools listed again (`agent_id` is accepted, as in Letta's document)."""
    del agent_id
    return http.json_reply(200, service.refresh(http.rt(), http.org_id(), mcp_server_id))


@router.get("/mcp-servers/connect/<mcp_server_id>")
def mcp_connect_mcp_server(mcp_server_id: str) -> Response[Any]:
    """The server reached, with an OAuth sign-in when it wants one (events as Letta's)."""
    server = service.retrieve(http.rt(), http.org_id(), mcp_server_id)
    events = connect.events(http.rt(), server, http.base_url())
    return http.stream_reply(shapes.connect_frames(events))


@router.get("/tools/mcp/oauth/callback/<session_id>")
def mcp_oauth_callback(
    session_id: str,
    code: Annotated[str | None, Query()] = None,
    state: Annotated[str | None, Query()] = None,
    error: Annotated[str | None, Query()] = None,
    error_description: Annotated[str | None, Query()] = None,
) -> Response[Any]:
    """Where the authorization server sends the user's browser back (no API key: the
    sign-in's unguessable id is the key, and its code is taken once)."""
    rt = http.rt()
    done = record_callback(
        rt.db,
        rt.engine.sealer,
        session_id,
        code=code,
        state=state,
        error=error,
        error_description=error_description,
    )
    return http.json_reply(200, done)
