"""A call of an MCP tool: its server read (and its token opened) from the store, the call made
through the SDK under the outbound-address policy, the answer as a tool result."""

from __future__ import annotations

from typing import Any

from cairn import outbound
from cairn.config import Settings
from cairn.domain.mcp_servers import STDIO_NEVER_STARTED, McpServer
from cairn.domain.tools import Tool
from cairn.mcp_servers import oauth
from cairn.mcp_servers.client import McpError, McpTarget, call_tool
from cairn.sealing import Sealer
from cairn.store import mcp_servers
from cairn.store.db import Database


def target_of(server: McpServer, signed_in: Any = None) -> McpTarget:
    """Where a streamable HTTP or SSE server is reached (never called for a stdio one), with
    the organization's OAuth sign-in to it if any (`oauth.stored`)."""
    assert server.server_url is not None and server.server_type != "stdio", server.server_type
    return McpTarget(server.server_url, server.server_type, server.headers(), signed_in)


def server_of(tool: Tool) -> str | None:
    mcp = tool.metadata.get("mcp")
    return mcp.get("server_id") if isinstance(mcp, dict) else None


def run_mcp_tool(
    db: Database, sealer: Sealer, settings: Settings, tool: Tool, args: dict[str, Any]
) -> dict[str, Any]:
    """{"success", "result"}: the tool's text, or why it failed (a failed call is the
    model's to read, never a crashed step)."""
    server_id = server_of(tool)
    with db.connection() as conn:
        server = mcp_servers.get(conn, sealer, tool.organization_id, server_id or "")
    if server is None:
        return {"success": False, "result": f"The MCP server of `{tool.name}` is gone."}
    if server.stdio:
        return {
            "success": False,
            "result": f"MCP server `{server.server_name}` {STDIO_NEVER_STARTED}",
        }
    opened = outbound.networks(settings.outbound_networks)
    try:
        target = target_of(server, oauth.stored(db, sealer, server))
        done = call_tool(target, tool.name, args, opened, settings.mcp_timeout_seconds)
    except McpError as err:
        return {"success": False, "result": str(err)}
    return {"success": not done.is_error, "result": done.text}
