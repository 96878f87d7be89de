"""The MCP integration as assembly registers it: Letta's two route families for servers and
their tools, the OAuth callback's keyless path, the pruning of ended sign-ins, and the calls
of an MCP server's tools from a step (the engine's external tools)."""

from __future__ import annotations

from cairn.mcp_servers import calls, connect
from cairn.mcp_servers.settings import McpSettings
from cairn.run.edge import Edge

EDGE = Edge(
    name="mcp_servers",
    routes={
        "cairn.mcp_servers.routes": (
            "/mcp-servers/",
            "/mcp-servers/<mcp_server_id>",
            "/mcp-servers/<mcp_server_id>/tools",
            "/mcp-servers/<mcp_server_id>/tools/<tool_id>",
            "/mcp-servers/<mcp_server_id>/tools/<tool_id>/run",
            "/mcp-servers/<mcp_server_id>/refresh",
            "/mcp-servers/connect/<mcp_server_id>",
            "/tools/mcp/oauth/callback/<session_id>",
        ),
        "cairn.mcp_servers.routes_by_name": (
            "/tools/mcp/servers",
            "/tools/mcp/servers/test",
            "/tools/mcp/servers/connect",
            "/tools/mcp/servers/<mcp_server_name>/tools",
            "/tools/mcp/servers/<mcp_server_name>/resync",
            "/tools/mcp/servers/<mcp_server_name>/tools/<tool_name>/execute",
            "/tools/mcp/servers/<mcp_server_name>/<mcp_tool_name>",
            "/tools/mcp/servers/<mcp_server_name>",
        ),
    },
    keyless=(rf"^{connect.CALLBACK_PATH}[\w-]+$",),
    sweep=connect.SWEEP,
    external_tools=calls.run_mcp_tool,
    settings=McpSettings,
)
