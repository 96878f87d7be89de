"""Organizations' MCP servers (Letta's /v1/mcp-servers): kept with their token sealed, their
tools listed from the server into the organization's tools (tool_type external_mcp), run
from a step or directly.

As Letta does, a server is kept when it is added or changed whether or not it answers: its
tools are synced best effort (a server that is down, or a name that does not resolve yet,
is kept with no tools, the reason logged; a refresh syncs them later). Streamable HTTP and
SSE servers are reached by their URL, every connection through the outbound-address policy
when it is made (an address written in the URL that the policy refuses is a 400 at once);
a stdio server's program is started for each use in the tool sandbox, as a custom tool
runs (mcp_servers/calls.reached)."""

from __future__ import annotations

import logging
from typing import Any

from cairn import outbound
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError, found
from cairn.mcp_servers import store
from cairn.mcp_servers.calls import reached, run_mcp_tool
from cairn.mcp_servers.client import McpError, McpTool, list_tools
from cairn.mcp_servers.models import McpServer
from cairn.mcp_servers.requests import McpServerCreate, McpServerUpdate, McpToolRun
from cairn.mcp_servers.settings import McpSettings
from cairn.run.runtime import Runtime
from cairn.store import tools
from cairn.store.db import Connection

logger = logging.getLogger(__name__)


def create(rt: Runtime, org: str, req: McpServerCreate) -> McpServer:
    """The server kept, with the tools it lists now (best effort: see the module's doc)."""
    server = _server_of(rt, org, req)
    with rt.db.connection() as conn:
        if store.by_name(conn, rt.engine.sealer, org, server.server_name) is not None:
            raise InvalidArgumentError(f"An MCP server named `{server.server_name}` exists")
    listed = _synced(rt, server)  # asked before the transaction: no lock held while it waits
    with rt.db.transaction() as conn:
        kept = store.put(conn, rt.engine.sealer, server)
        if listed is not None:
            _keep_tools(conn, kept, listed, best_effort=True)
    return kept


def list_servers(rt: Runtime, org: str) -> list[McpServer]:
    with rt.db.connection() as conn:
        return store.list_servers(conn, rt.engine.sealer, org)


def retrieve(rt: Runtime, org: str, server_id: str) -> McpServer:
    with rt.db.connection() as conn:
        return _server(conn, rt, org, server_id)


REACHED_BY = ("server_url", "auth_header", "auth_token", "custom_headers")
STARTED_BY = ("command", "args", "env")


def update(rt: Runtime, org: str, server_id: str, req: McpServerUpdate) -> McpServer:
    """New settings over the server's (its type stays). Kept whether or not the server
    answers on its new URL or credentials: a failure to reach it is logged, as at create."""
    with rt.db.connection() as conn:
        found = _server(conn, rt, org, server_id)
    settable = STARTED_BY if found.stdio else REACHED_BY
    changes = {k: v for k, v in req.config.items() if k in settable}
    if req.server_name:
        changes["server_name"] = req.server_name
    try:
        changed = McpServer.model_validate(found.model_dump() | changes)
    except ValueError as err:
        raise InvalidArgumentError(f"config: {err}") from None
    if changed.server_url:
        _written_url(rt, changed.server_url)
    if not changed.stdio and set(REACHED_BY) & set(changes):
        _synced(rt, changed)  # reached once, for the log; its tools change on a refresh
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
        store.delete_tools_of(conn, org, server_id, keep=set())
        store.delete(conn, org, server_id)


def tools_of(rt: Runtime, org: str, server_id: str) -> list[Tool]:
    with rt.db.connection() as conn:
        _server(conn, rt, org, server_id)
        return store.tools_of(conn, org, server_id)


def tool_of(rt: Runtime, org: str, server_id: str, tool_id: str) -> Tool:
    tool = next((t for t in tools_of(rt, org, server_id) if t.id == tool_id), None)
    return found(tool, f"Tool with id '{tool_id}' not found on MCP server {server_id}")


def run(rt: Runtime, org: str, server_id: str, tool_id: str, req: McpToolRun) -> dict[str, Any]:
    """A direct call of one of the server's tools, as Letta's ToolExecutionResult."""
    tool = tool_of(rt, org, server_id, tool_id)
    return _execution(
        run_mcp_tool(rt.db, rt.engine.sealer, rt.settings, rt.engine.sandbox, tool, req.args)
    )


def refresh(rt: Runtime, org: str, server_id: str) -> dict[str, list[str]]:
    """The server's tools as it lists them now: new ones added, changed schemas updated,
    gone ones deleted (and taken off their agents)."""
    with rt.db.connection() as conn:
        server = _server(conn, rt, org, server_id)
    listed = _listed(rt, server)
    with rt.db.transaction() as conn:
        return _keep_tools(conn, server, listed)


def _listed(rt: Runtime, server: McpServer) -> list[McpTool]:
    """What the server lists now (a stdio server's program started for it in the tool
    sandbox); a 400 saying why when it cannot be reached."""
    opened = outbound.networks(rt.settings.outbound_networks)
    try:
        with reached(server, rt.db, rt.engine.sealer, rt.engine.sandbox, rt.settings) as target:
            return list_tools(target, opened, McpSettings.within(rt.settings).mcp_timeout_seconds)
    except McpError as err:
        raise InvalidArgumentError(f"MCP server `{server.server_name}`: {err}") from None


def _synced(rt: Runtime, server: McpServer) -> list[McpTool] | None:
    """What the server lists now, or None (logged) when it cannot be reached: Letta keeps a
    server it could not sync."""
    try:
        return _listed(rt, server)
    except InvalidArgumentError as err:
        # A stdio server's reason may quote what its program wrote: its organization's to
        # read (refresh says it), never our logs'.
        logger.warning(
            "MCP server kept without syncing its tools: %s",
            f"the stdio MCP server `{server.server_name}` failed" if server.stdio else err,
        )
        return None


def _keep_tools(
    conn: Connection,
    server: McpServer,
    listed: list[McpTool],
    keep_others: set[str] | None = None,
    *,
    best_effort: bool = False,
) -> dict[str, list[str]]:
    org = server.organization_id
    before = {t.name: t for t in store.tools_of(conn, org, server.id)}
    report: dict[str, list[str]] = {"added": [], "updated": [], "deleted": []}
    for item in listed:
        parameters = item.input_schema or {"type": "object", "properties": {}}
        schema = {"name": item.name, "description": item.description, "parameters": parameters}
        clash = tools.get_by_name(conn, org, item.name)
        if clash is not None and clash.id not in {t.id for t in before.values()}:
            why = (
                f"MCP server `{server.server_name}` has a tool `{item.name}`, and this "
                "organization has another tool of that name"
            )
            if not best_effort:
                raise InvalidArgumentError(why)
            logger.warning("MCP tool not synced: %s", why)  # the others are
            continue
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
    report["deleted"] = store.delete_tools_of(conn, org, server.id, keep)
    return report


def _server(conn: Connection, rt: Runtime, org: str, server_id: str) -> McpServer:
    return found(store.get(conn, rt.engine.sealer, org, server_id), "MCP server", server_id)


# -- Letta's by-name routes (/v1/tools/mcp/servers) -------------------------------------


def named(rt: Runtime, org: str, name: str) -> McpServer:
    with rt.db.connection() as conn:
        server = store.by_name(conn, rt.engine.sealer, org, name)
    return found(server, f"MCP server `{name}` not found")


def live_tools(rt: Runtime, server: McpServer) -> list[McpTool]:
    """What the server lists now (nothing kept)."""
    return _listed(rt, server)


def register(rt: Runtime, org: str, name: str, tool_name: str) -> Tool:
    """One of the server's tools kept among the organization's (Letta's add_mcp_tool)."""
    server = named(rt, org, name)
    listed = next((t for t in _listed(rt, server) if t.name == tool_name), None)
    tool = found(listed, f"MCP server `{name}` has no tool `{tool_name}`")
    with rt.db.transaction() as conn:
        kept = {t.name: t for t in store.tools_of(conn, org, server.id)}
        _keep_tools(conn, server, [tool], keep_others=set(kept))
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
    return _execution(
        run_mcp_tool(rt.db, rt.engine.sealer, rt.settings, rt.engine.sandbox, transient, args)
    )


def probe(rt: Runtime, org: str, req: McpServerCreate) -> list[McpTool]:
    """A server's tools, without adding it (Letta's test route); unreachable: a 400."""
    return _listed(rt, described(rt, org, req))


def described(rt: Runtime, org: str, req: McpServerCreate) -> McpServer:
    """The server a body describes, not kept (400s as at create)."""
    return _server_of(rt, org, req)


def _server_of(rt: Runtime, org: str, req: McpServerCreate) -> McpServer:
    """The server a body describes (not stored): a 400 naming the field for a stdio one
    with no command, another with no URL, or a URL the policy refuses as written."""
    config = req.config
    if config.mcp_server_type == "stdio":
        if not config.command:
            raise InvalidArgumentError("config.command: a stdio MCP server names its command")
        return McpServer(
            organization_id=org,
            server_name=req.server_name,
            server_type="stdio",
            command=config.command,
            args=config.args or [],
            env=config.env,
        )
    if not config.server_url:
        raise InvalidArgumentError("config.server_url: an MCP server needs its URL")
    _written_url(rt, config.server_url)
    return McpServer(
        organization_id=org,
        server_name=req.server_name,
        server_type=config.mcp_server_type,
        server_url=config.server_url,
        auth_header=config.auth_header,
        auth_token=config.auth_token,
        custom_headers=config.custom_headers,
    )


def _written_url(rt: Runtime, url: str) -> None:
    try:
        outbound.check_written(url, outbound.networks(rt.settings.outbound_networks))
    except outbound.Refused as err:
        raise InvalidArgumentError(f"config.server_url: {err}") from None


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
