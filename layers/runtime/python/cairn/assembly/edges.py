"""The edges this server runs, each registered through its one record (`cairn.api.edge`):
to add a channel or an integration, add its record here."""

from __future__ import annotations

from cairn.agent_files.edge import EDGE as AGENT_FILES
from cairn.api.edge import Edge
from cairn.chat_completions.edge import EDGE as CHAT_COMPLETIONS
from cairn.mcp_servers.edge import EDGE as MCP_SERVERS
from cairn.telegram.edge import EDGE as TELEGRAM

EDGES: tuple[Edge, ...] = (MCP_SERVERS, AGENT_FILES, CHAT_COMPLETIONS, TELEGRAM)
