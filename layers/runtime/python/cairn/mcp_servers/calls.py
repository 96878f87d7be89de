"""A call of an MCP tool: its server read (and its token opened) from the store, the call made
through the SDK under the outbound-address policy (or, for a stdio server, with its program
in the tool sandbox), the answer as a tool result."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from cairn import outbound
from cairn.config import Settings
from cairn.domain.tools import Tool
from cairn.mcp_servers import oauth
from cairn.mcp_servers import store as mcp_servers
from cairn.mcp_servers.client import McpError, McpTarget, call_tool
from cairn.mcp_servers.models import McpServer
from cairn.mcp_servers.settings import McpSettings
from cairn.sealing import Sealer
from cairn.store import tenancy
from cairn.store.db import Database
from cairn.tools.sandbox import Network, Sandbox, SandboxRefused, ServerLaunch


def target_of(server: McpServer, signed_in: Any = None) -> McpTarget:
    """Where a streamable HTTP or SSE server is reached (never called for a stdio one), with
    the organization's OAuth sign-in to it if any (`oauth.stored`)."""
    assert server.server_url is not None and server.server_type != "stdio", server.server_type
    return McpTarget(server.server_url, server.server_type, server.headers(), signed_in)


@contextmanager
def reached(
    server: McpServer, db: Database, sealer: Sealer, sandbox: Sandbox, settings: Settings
) -> Iterator[McpTarget]:
    """The server for one use: by its URL (with its organization's OAuth sign-in, if any),
    or a stdio server's program confined in the tool sandbox with its own environment,
    reaching what its organization's tools may (its allowed hosts, through the egress
    proxy) for at most the MCP timeout."""
    if not server.stdio:
        yield target_of(server, oauth.stored(db, sealer, server))
        return
    assert server.command is not None
    with db.connection() as conn:
        hosts = tenancy.tool_hosts(conn, server.organization_id)
    launch = ServerLaunch(
        argv=(server.command, *(server.args or ())),
        environment=dict(server.env or {}),
        network=Network(server.organization_id, hosts),
        timeout_seconds=McpSettings.within(settings).mcp_timeout_seconds,
    )
    with ExitStack() as held:
        try:
            confined = held.enter_context(sandbox.confined(launch))
        except SandboxRefused as err:
            raise McpError(
                f"the stdio MCP server `{server.server_name}` cannot start: {err}"
            ) from None
        yield McpTarget(server.server_name, "stdio", process=confined)


def server_of(tool: Tool) -> str | None:
    mcp = tool.metadata.get("mcp")
    return mcp.get("server_id") if isinstance(mcp, dict) else None


def run_mcp_tool(
    db: Database,
    sealer: Sealer,
    settings: Settings,
    sandbox: Sandbox,
    tool: Tool,
    args: dict[str, Any],
) -> dict[str, Any]:
    """{"success", "result"}: the tool's text, or why it failed (a failed call is the
    model's to read, never a crashed step)."""
    server_id = server_of(tool)
    with db.connection() as conn:
        server = mcp_servers.get(conn, sealer, tool.organization_id, server_id or "")
    if server is None:
        return {"success": False, "result": f"The MCP server of `{tool.name}` is gone."}
    opened = outbound.networks(settings.outbound_networks)
    try:
        with reached(server, db, sealer, sandbox, settings) as target:
            done = call_tool(
                target, tool.name, args, opened, McpSettings.within(settings).mcp_timeout_seconds
            )
    except McpError as err:
        return {"success": False, "result": str(err)}
    return {"success": not done.is_error, "result": done.text}
