"""An organization's MCP server (Letta's StreamableHTTPMCPServer, SSEMCPServer and
StdioMCPServer). A stdio server's program runs in the tool sandbox for each use
(mcp_servers/calls.reached)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import new_id, prefix

SERVER_ID = prefix("mcp_server")
SIGN_IN_ID = prefix("mcp-oauth")
McpServerType = Literal["streamable_http", "sse", "stdio"]


class McpServer(DomainModel):
    id: str = Field(default_factory=lambda: new_id(SERVER_ID))
    organization_id: str
    server_name: str = Field(min_length=1, max_length=200)
    server_type: McpServerType
    server_url: str | None = Field(default=None, min_length=1, max_length=2000)
    auth_header: str | None = None
    # Opened; sealed at rest (mcp_servers/store.py), never shown whole.
    auth_token: str | None = Field(default=None, repr=False)
    custom_headers: dict[str, str] | None = Field(default=None, repr=False)
    # stdio's: the program and its environment, sealed at rest like the token and given
    # whole to the program (and shown to its organization, as Letta shows it).
    command: str | None = Field(default=None, min_length=1, max_length=2000)
    args: list[str] | None = None
    env: dict[str, str] | None = Field(default=None, repr=False)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    @model_validator(mode="after")
    def _reached_somehow(self) -> McpServer:
        if self.server_type == "stdio" and not self.command:
            raise ValueError("command: a stdio MCP server names its command")
        if self.server_type != "stdio" and not self.server_url:
            raise ValueError("server_url: an MCP server needs its URL")
        return self

    @property
    def stdio(self) -> bool:
        return self.server_type == "stdio"

    def headers(self) -> dict[str, str]:
        """What each request to the server carries."""
        found = dict(self.custom_headers or {})
        if self.auth_token:
            found[self.auth_header or "Authorization"] = self.auth_token
        return found


OAuthStatus = Literal["pending", "authorized", "error"]


class McpOAuthSession(DomainModel):
    """One OAuth sign-in to an MCP server (Letta's MCPOAuth), by the organization: pending
    until its callback brings the authorization code, then authorized with the tokens."""

    id: str = Field(default_factory=lambda: new_id(SIGN_IN_ID))
    organization_id: str
    server_url: str
    server_name: str
    status: OAuthStatus = "pending"
    authorization_url: str | None = None
    redirect_uri: str | None = None
    client_id: str | None = None
    state: str | None = None
    token_type: str | None = None
    scope: str | None = None
    expires_at: datetime | None = None
    # The authorization server's metadata as discovered (its token endpoint, for refreshes).
    oauth_metadata: dict[str, Any] | None = None
    # Opened; sealed at rest (mcp_servers/store_oauth.py), never shown.
    # The client the authorization server registered (its secret included), as the SDK
    # reads it back (OAuthClientInformationFull).
    client_info: dict[str, Any] | None = Field(default=None, repr=False)
    authorization_code: str | None = Field(default=None, repr=False)
    access_token: str | None = Field(default=None, repr=False)
    refresh_token: str | None = Field(default=None, repr=False)
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
