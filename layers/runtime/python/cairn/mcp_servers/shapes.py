"""MCP servers as Letta's StreamableHTTPMCPServer, SSEMCPServer and StdioMCPServer: the token
and the custom headers' values masked (their last four characters at most), never shown
whole. A stdio server's `env` is shown to its organization as Letta 0.16.1 shows it (its
StdioMCPServer carries `stdio_config.env` as stored): the organization wrote it, as it writes
a tool's secrets, and reads it back; it stays sealed at rest and out of logs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from cairn.domain.providers import hint
from cairn.mcp_servers.client import McpTool
from cairn.mcp_servers.models import McpServer


def masked(value: str | None) -> str | None:
    return None if value is None else f"...{hint(value)}"


def _masked_all(values: dict[str, str] | None) -> dict[str, str | None] | None:
    return None if values is None else {name: masked(value) for name, value in values.items()}


def mcp_server_json(server: McpServer) -> dict[str, Any]:
    if server.stdio:
        return {
            "id": server.id,
            "server_name": server.server_name,
            "mcp_server_type": "stdio",
            "command": server.command,
            "args": server.args or [],
            "env": server.env,
        }
    return {
        "id": server.id,
        "server_name": server.server_name,
        "mcp_server_type": server.server_type,
        "server_url": server.server_url,
        "auth_header": server.auth_header,
        "auth_token": masked(server.auth_token),
        "custom_headers": _masked_all(server.custom_headers),
    }


def mcp_config_json(server: McpServer) -> dict[str, Any]:
    """Letta's older StreamableHTTPServerConfig / SSEServerConfig / StdioServerConfig, by name."""
    shown = mcp_server_json(server)
    if server.stdio:
        return {
            "server_name": server.server_name,
            "type": "stdio",
            "command": shown["command"],
            "args": shown["args"],
            "env": shown["env"],
        }
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


def connect_frames(events: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """A connect stream's events as Letta's `oauth_stream_event` frames (`data: {...}`)."""
    for event in events:
        if event["event"] == "success":
            event = {**event, "tools": [mcp_tool_json(t) for t in event["tools"]]}
        yield f"data: {json.dumps(event)}\n\n".encode()
