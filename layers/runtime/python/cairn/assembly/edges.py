"""The edges this server runs, each registered through its one record (`cairn.run.edge`):
to add a channel or an integration, add its record here. `SETTINGS` is the class of the process's
settings: the core's groups and each edge's."""

from __future__ import annotations

from typing import cast

from cairn import config
from cairn.agent_files.edge import EDGE as AGENT_FILES
from cairn.chat_completions.edge import EDGE as CHAT_COMPLETIONS
from cairn.letta_import.edge import EDGE as LETTA_IMPORT
from cairn.mcp_servers.edge import EDGE as MCP_SERVERS
from cairn.run.edge import Edge
from cairn.telegram.edge import EDGE as TELEGRAM

EDGES: tuple[Edge, ...] = (MCP_SERVERS, AGENT_FILES, CHAT_COMPLETIONS, TELEGRAM, LETTA_IMPORT)


def _with_edges() -> type[config.Settings]:
    """The core's settings and each edge's group, one class (the groups' fields are flat:
    `settings.telegram_api_url`, read through `TelegramSettings.within`)."""
    groups = tuple(e.settings for e in EDGES if e.settings is not None)
    made = type("Settings", (config.Settings, *groups), {"__module__": __name__})
    return cast(type[config.Settings], made)


SETTINGS = _with_edges()
