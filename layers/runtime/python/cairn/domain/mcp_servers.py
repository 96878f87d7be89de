"""An organization's MCP server (Letta's StreamableHTTPMCPServer and SSEMCPServer)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import new_id

McpServerType = Literal["streamable_http", "sse"]


class McpServer(DomainModel):
    id: str = Field(default_factory=lambda: new_id("mcp_server"))
    organization_id: str
    server_name: str = Field(min_length=1, max_length=200)
    server_type: McpServerType
    server_url: str = Field(min_length=1, max_length=2000)
    auth_header: str | None = None
    # Opened; sealed at rest (store/mcp_servers.py), never shown whole.
    auth_token: str | None = Field(default=None, repr=False)
    custom_headers: dict[str, str] | None = Field(default=None, repr=False)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    def headers(self) -> dict[str, str]:
        """What each request to the server carries."""
        found = dict(self.custom_headers or {})
        if self.auth_token:
            found[self.auth_header or "Authorization"] = self.auth_token
        return found
