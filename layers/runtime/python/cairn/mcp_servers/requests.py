"""MCP servers, as Letta's /v1/mcp-servers bodies give them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from cairn.services.requests.base import RequestBody


class McpServerConfig(RequestBody):
    mcp_server_type: Literal["streamable_http", "sse", "stdio"] = "streamable_http"
    server_url: str | None = Field(default=None, max_length=2000)
    auth_header: str | None = Field(default=None, max_length=200)
    auth_token: str | None = Field(default=None, max_length=10_000)
    custom_headers: dict[str, str] | None = None
    # stdio's: refused (McpServers.create says why), read only to say so.
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None


class McpServerCreate(RequestBody):
    server_name: str = Field(min_length=1, max_length=200)
    config: McpServerConfig


class McpServerUpdate(RequestBody):
    server_name: str | None = Field(default=None, min_length=1, max_length=200)
    config: dict[str, Any] = Field(default_factory=dict)


class McpToolRun(RequestBody):
    args: dict[str, Any] = Field(default_factory=dict)
