"""The MCP integration's settings (a group assembly adds to the process's settings)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from cairn.config import Group


class McpSettings(Group):
    ENV: ClassVar[dict[str, str]] = {
        "mcp_timeout_seconds": "CAIRN_MCP_TIMEOUT_SECONDS",
        "mcp_oauth_wait_seconds": "CAIRN_MCP_OAUTH_WAIT_SECONDS",
    }
    # How long a call to an organization's MCP server (listing its tools, a tool call) may take.
    mcp_timeout_seconds: float = Field(default=30.0, gt=0, le=900)
    # How long a connect stream waits for its user to finish an MCP server's OAuth sign-in
    # (Letta's 5 minutes), within what is left of the request.
    mcp_oauth_wait_seconds: float = Field(default=300.0, gt=0, le=900)
