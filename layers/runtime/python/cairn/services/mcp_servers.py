"""Organizations' MCP servers (Letta's /v1/mcp-servers): kept with their token sealed, their
tools listed from the server into the organization's tools (tool_type external_mcp), run
from a step or directly. Streamable HTTP and SSE; stdio is refused (it would run a command
on the server). Every URL goes through the outbound-address policy, when added and on
every call."""

from __future__ import annotations

from typing import Any

from cairn import outbound
from cairn.domain.mcp_servers import McpServer
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError, NotFoundError, found
from cairn.run.mcp_calls import run_mcp_tool, target_of
from cairn.run.runtime import Runtime
from cairn.services.requests import McpServerCreate, McpServerUpdate, McpToolRun
from cairn.store import mcp_servers as store
from cairn.store import tools
from cairn.store.db import Connection
from cairn.tools.mcp_client import McpError, McpTool, list_tools

STDIO_REFUSED = (
    "stdio MCP servers are not served: one would run a command on the server. Run the "
    "server with a streamable HTTP (or SSE) transport and add it by its URL."
)


def create(rt: Runtime, org: str, req: McpServerCreate, *, with_tools: bool = True) -> McpServer:
    """The server, with its tools as listed by it now (without: reached, none kept; Letta's
    by-name routes register them one by one); one that cannot be reached is a 400 saying
    why, and nothing is kept."""
    server = _server_of(org, req)
    with rt.db.connection() as conn:
        if store.by_name(conn, rt.engine.sealer, org, server.server_name) is not None:
            raise InvalidArgumentError(f"An MCP server named `{server.server_name}` exists")
    listed = _listed(rt, server)
    with rt.db.transaction() as conn:
        kept = store.put(conn, rt.engine.sealer, server)
        if with_tools:
            _keep_tools(conn, kept, listed)
    return kept


def list_servers(rt: Runtime, org: str) -> list[McpServer]:
    with rt.db.connection() as conn:
        return store.list_servers(conn, rt.engine.sealer, org)


def retrieve(rt: Runtime, org: str, server_id: str) -> McpServer:
    with rt.db.connection() as conn:
        return _server(conn, rt, org, server_id)


def update(rt: Runtime, org: str, server_id: str, req: McpServerUpdate) -> McpServer:
    """New settings over the server's (its type stays); a new URL or credentials must
    reach it."""
    with rt.db.connection() as conn:
        found = _server(conn, rt, org, server_id)
    changes = {
        k: v
        for k, v in req.config.items()
        if k in ("server_url", "auth_header", "auth_token", "custom_headers")
    }
    if req.server_name:
        changes["server_name"] = req.server_name
    try:
        changed = McpServer.model_validate(found.model_dump() | changes)
    except ValueError as err:
        raise InvalidArgumentError(f"config: {err}") from None
    if {"server_url", "auth_header", "auth_token", "custom_headers"} & set(changes):
        _listed(rt, changed)
    with rt.db.transaction() as conn:
        other = store.by_name(conn, rt.engine.sealer, org, changed.server_name)
        if other is not None and other.id != server_id:
            raise InvalidArgumentError(
                f"An MCP server named `{changed.server_name}` exists already"
            )
        return store.put(conn, rt.engine.sealer, changed)


def delete(rt: Runtime, org: str, server_id: str) -> None:
    """The server and its tools (taken off every agent)."""
    with rt.db.transaction() as conn:
        _server(conn, rt, org, server_id)
        tools.delete_of_mcp_server(conn, org, server_id, keep=set())
        store.delete(conn, org, server_id)


def tools_of(rt: Runtime, org: str, server_id: str) -> list[Tool]:
    with rt.db.connection() as conn:
        _server(conn, rt, org, server_id)
        return tools.of_mcp_server(conn, org, server_id)


def tool_of(rt: Runtime, org: str, server_id: str, tool_id: str) -> Tool:
    found = next((t for t in tools_of(rt, org, server_id) if t.id == tool_id), None)
    if found is None:
        raise NotFoundError(f"Tool with id '{tool_id}' not found on MCP server {server_id}")
    return found


def run(rt: Runtime, org: str, server_id: str, tool_id: str, req: McpToolRun) -> dict[str, Any]:
    """A direct call of one of the server's tools, as Letta's ToolExecutionResult."""
    tool = tool_of(rt, org, server_id, tool_id)
    return _execution(run_mcp_tool(rt.db, rt.engine.sealer, rt.settings, tool, req.args))


def refresh(rt: Runtime, org: str, server_id: str) -> dict[str, list[str]]:
    """The server's tools as it lists them now: new ones added, changed schemas updated,
    gone ones deleted (and taken off their agents)."""
    with rt.db.connection() as conn:
        server = _server(conn, rt, org, server_id)
    listed = _listed(rt, server)
    with rt.db.transaction() as conn:
        return _keep_tools(conn, server, listed)


def _listed(rt: Runtime, server: McpServer) -> list[McpTool]:
    opened = outbound.networks(rt.settings.outbound_networks)
    try:
        return list_tools(target_of(server), opened, rt.settings.mcp_timeout_seconds)
    except McpError as err:
        raise InvalidArgumentError(f"MCP server `{server.server_name}`: {err}") from None


def _keep_tools(
    conn: Connection, server: McpServer, listed: list[McpTool], keep_others: set[str] | None = None
) -> dict[str, list[str]]:
    org = server.organization_id
    before = {t.name: t for t in tools.of_mcp_server(conn, org, server.id)}
    report: dict[str, list[str]] = {"added": [], "updated": [], "deleted": []}
    for item in listed:
        parameters = item.input_schema or {"type": "object", "properties": {}}
        schema = {"name": item.name, "description": item.description, "parameters": parameters}
        clash = tools.get_by_name(conn, org, item.name)
        if clash is not None and clash.id not in {t.id for t in before.values()}:
            raise InvalidArgumentError(
                f"MCP server `{server.server_name}` has a tool `{item.name}`, and this "
                "organization has another tool of that name"
            )
        old = before.get(item.name)
        tool = Tool(
            organization_id=org,
            name=item.name,
            description=item.description,
            tool_type="external_mcp",
            source_type="python",
            json_schema=schema,
            tags=[f"mcp:{server.server_name}"],
            metadata={"mcp": {"server_name": server.server_name, "server_id": server.id}},
            **({"id": old.id} if old else {}),
        )
        if old is None:
            tools.upsert(conn, tool)
            report["added"].append(item.name)
        elif old.json_schema != schema:
            tools.update(conn, tool)
            report["updated"].append(item.name)
    keep = {t.name for t in listed} | (keep_others or set())
    report["deleted"] = tools.delete_of_mcp_server(conn, org, server.id, keep)
    return report


def _server(conn: Connection, rt: Runtime, org: str, server_id: str) -> McpServer:
    return found(store.get(conn, rt.engine.sealer, org, server_id), "MCP server", server_id)


# -- Letta's by-name routes (/v1/tools/mcp/servers) -------------------------------------


def named(rt: Runtime, org: str, name: str) -> McpServer:
    with rt.db.connection() as conn:
        found = store.by_name(conn, rt.engine.sealer, org, name)
    if found is None:
        raise NotFoundError(f"MCP server `{name}` not found")
    return found


def live_tools(rt: Runtime, server: McpServer) -> list[McpTool]:
    """What the server lists now (nothing kept)."""
    return _listed(rt, server)


def register(rt: Runtime, org: str, name: str, tool_name: str) -> Tool:
    """One of the server's tools kept among the organization's (Letta's add_mcp_tool)."""
    server = named(rt, org, name)
    found = next((t for t in _listed(rt, server) if t.name == tool_name), None)
    if found is None:
        raise NotFoundError(f"MCP server `{name}` has no tool `{tool_name}`")
    with rt.db.transaction() as conn:
        kept = {t.name: t for t in tools.of_mcp_server(conn, org, server.id)}
        _keep_tools(conn, server, [found], keep_others=set(kept))
        made = tools.get_by_name(conn, org, tool_name)
    assert made is not None
    return made


def execute(
    rt: Runtime, org: str, name: str, tool_name: str, args: dict[str, Any]
) -> dict[str, Any]:
    """A call of a tool of the server by name, kept or not."""
    server = named(rt, org, name)
    transient = Tool(
        organization_id=org,
        name=tool_name,
        tool_type="external_mcp",
        metadata={"mcp": {"server_name": name, "server_id": server.id}},
    )
    return _execution(run_mcp_tool(rt.db, rt.engine.sealer, rt.settings, transient, args))


def probe(rt: Runtime, org: str, req: McpServerCreate) -> list[McpTool]:
    """A server's tools, without adding it (Letta's test route); unreachable: a 400."""
    return _listed(rt, _server_of(org, req))


def _server_of(org: str, req: McpServerCreate) -> McpServer:
    """The server a body describes (not stored); stdio, or no URL, is a 400."""
    config = req.config
    if config.mcp_server_type == "stdio":
        raise InvalidArgumentError(STDIO_REFUSED)
    if not config.server_url:
        raise InvalidArgumentError("config.server_url: an MCP server needs its URL")
    return McpServer(
        organization_id=org,
        server_name=req.server_name,
        server_type=config.mcp_server_type,
        server_url=config.server_url,
        auth_header=config.auth_header,
        auth_token=config.auth_token,
        custom_headers=config.custom_headers,
    )


def _execution(done: dict[str, Any]) -> dict[str, Any]:
    """A call's {"success", "result"} as Letta's ToolExecutionResult."""
    return {
        "status": "success" if done["success"] else "error",
        "func_return": done["result"],
        "stdout": [],
        "stderr": [],
        "agent_state": None,
        "sandbox_config_fingerprint": None,
    }
