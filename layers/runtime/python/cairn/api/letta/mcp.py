"""MCP servers as Letta's StreamableHTTPMCPServer and SSEMCPServer: the token and the custom
headers' values masked (their last four characters at most), never shown whole."""

from __future__ import annotations

from typing import Any

from cairn.domain.mcp_servers import McpServer
from cairn.domain.providers import hint
from cairn.tools.mcp_client import McpTool


def masked(value: str | None) -> str | None:
    return None if value is None else f"...{hint(value)}"


def mcp_server_json(server: McpServer) -> dict[str, Any]:
    headers = server.custom_headers
    return {
        "id": server.id,
        "server_name": server.server_name,
        "mcp_server_type": server.server_type,
        "server_url": server.server_url,
        "auth_header": server.auth_header,
        "auth_token": masked(server.auth_token),
        "custom_headers": None
        if headers is None
        else {name: masked(value) for name, value in headers.items()},
    }


def mcp_config_json(server: McpServer) -> dict[str, Any]:
    """Letta's older StreamableHTTPServerConfig / SSEServerConfig, by name."""
    shown = mcp_server_json(server)
    return {
        "server_name": server.server_name,
        "type": server.server_type,
        "server_url": server.server_url,
        "auth_header": server.auth_header,
        "auth_token": shown["auth_token"],
        "custom_headers": shown["custom_headers"],
    }


def mcp_tool_json(tool: McpTool) -> dict[str, Any]:
    """An MCP tool as the server lists it (Letta's MCPTool)."""
    return {
        "name": tool.name,
        "title": None,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": None,
        "annotations": None,
        "_meta": None,
        "health": None,
    }
