"""Letta's older MCP routes, by server name (/v1/tools/mcp/servers): the same servers and
tools as /v1/mcp-servers, added the same way (kept, its tools synced best effort: Letta
0.16.1's `add_mcp_server_to_config`); a tool may also be registered one by one."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.errors import InvalidArgumentError
from cairn.mcp_servers import connect, service, shapes
from cairn.mcp_servers.requests import (
    McpServerConfig,
    McpServerCreate,
    McpServerUpdate,
    McpToolRun,
)

router = APIGatewayHttpRouter()
PREFIX = "/tools/mcp/servers"


def _create_body(body: dict[str, Any]) -> McpServerCreate:
    """Letta's ServerConfig: the name and the settings side by side, `type` the transport."""
    settings = {k: v for k, v in body.items() if k not in ("server_name", "type")}
    name = body.get("server_name")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError("server_name: the MCP server's name is needed")
    kind = body.get("type") or ("stdio" if "command" in body else "streamable_http")
    try:
        config = McpServerConfig.model_validate({**settings, "mcp_server_type": kind})
    except ValueError as err:
        raise InvalidArgumentError(f"config: {err}") from None
    return McpServerCreate(server_name=name, config=config)


def _all() -> list[dict[str, Any]]:
    return [shapes.mcp_config_json(s) for s in service.list_servers(http.rt(), http.org_id())]


@router.get(f"{PREFIX}")
def list_mcp_servers() -> Response[Any]:
    found = service.list_servers(http.rt(), http.org_id())
    return http.json_reply(200, {s.server_name: shapes.mcp_config_json(s) for s in found})


@router.put(f"{PREFIX}")
def add_mcp_server(body: Annotated[dict[str, Any], Body()]) -> Response[Any]:
    service.create(http.rt(), http.org_id(), _create_body(body))
    return http.json_reply(200, _all())


@router.post(f"{PREFIX}/test")
def test_mcp_server(body: Annotated[dict[str, Any], Body()]) -> Response[Any]:
    found = service.probe(http.rt(), http.org_id(), _create_body(body))
    return http.json_reply(
        200, {"status": "success", "tools": [shapes.mcp_tool_json(t) for t in found]}
    )


@router.post(f"{PREFIX}/connect")
def connect_mcp_server(body: Annotated[dict[str, Any], Body()]) -> Response[Any]:
    """A server described in the body (not kept) reached, with an OAuth sign-in when it
    wants one: the stream of GET /v1/mcp-servers/connect/{id}."""
    server = service.described(http.rt(), http.org_id(), _create_body(body))
    events = connect.events(http.rt(), server, http.base_url())
    return http.stream_reply(shapes.connect_frames(events))


@router.get(f"{PREFIX}/<mcp_server_name>/tools")
def list_mcp_tools_by_server(mcp_server_name: str) -> Response[Any]:
    server = service.named(http.rt(), http.org_id(), mcp_server_name)
    found = service.live_tools(http.rt(), server)
    return http.json_reply(200, [shapes.mcp_tool_json(t) for t in found])


@router.post(f"{PREFIX}/<mcp_server_name>/resync")
def resync_mcp_server_tools(mcp_server_name: str) -> Response[Any]:
    server = service.named(http.rt(), http.org_id(), mcp_server_name)
    return http.json_reply(200, service.refresh(http.rt(), http.org_id(), server.id))


@router.post(f"{PREFIX}/<mcp_server_name>/tools/<tool_name>/execute")
def execute_mcp_tool(
    mcp_server_name: str, tool_name: str, req: Annotated[McpToolRun, Body()]
) -> Response[Any]:
    done = service.execute(http.rt(), http.org_id(), mcp_server_name, tool_name, req.args)
    return http.json_reply(200, done)


@router.post(f"{PREFIX}/<mcp_server_name>/<mcp_tool_name>")
def add_mcp_tool(mcp_server_name: str, mcp_tool_name: str) -> Response[Any]:
    made = service.register(http.rt(), http.org_id(), mcp_server_name, mcp_tool_name)
    return http.json_reply(200, letta.tool_json(made))


@router.patch(f"{PREFIX}/<mcp_server_name>")
def update_mcp_server(
    mcp_server_name: str, body: Annotated[dict[str, Any], Body()]
) -> Response[Any]:
    server = service.named(http.rt(), http.org_id(), mcp_server_name)
    name = body.get("server_name")
    settings = {k: v for k, v in body.items() if k != "server_name"}
    update = McpServerUpdate(server_name=name if isinstance(name, str) else None, config=settings)
    changed = service.update(http.rt(), http.org_id(), server.id, update)
    return http.json_reply(200, shapes.mcp_config_json(changed))


@router.delete(f"{PREFIX}/<mcp_server_name>")
def delete_mcp_server(mcp_server_name: str) -> Response[Any]:
    server = service.named(http.rt(), http.org_id(), mcp_server_name)
    service.delete(http.rt(), http.org_id(), server.id)
    return http.json_reply(200, _all())
