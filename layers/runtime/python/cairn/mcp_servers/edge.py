"""The MCP integration as assembly registers it: Letta's two route families for servers and
their tools, the OAuth callback's keyless path, the pruning of ended sign-ins, and the calls
of an MCP server's tools from a step (the engine's external tools)."""

from __future__ import annotations

from cairn.mcp_servers import calls, connect
from cairn.mcp_servers.settings import McpSettings
from cairn.run.edge import Edge

EDGE = Edge(
    name="mcp_servers",
    routes=("cairn.mcp_servers.routes", "cairn.mcp_servers.routes_by_name"),
    keyless=(rf"^{connect.CALLBACK_PATH}[\w-]+$",),
    sweep=connect.SWEEP,
    external_tools=calls.run_mcp_tool,
    settings=McpSettings,
)
