"""What a built-in tool may use while it runs: the step's memory and its search services.

A protocol, so the tools stay pure: the engine supplies the real thing (Postgres searches,
an embedder), tests supply their own.
"""

from __future__ import annotations

from typing import Any, Protocol

from cairn.domain.tools import Tool
from cairn.memory.edits import CoreMemory
from cairn.tools.sandbox import SandboxResult


class ToolContext(Protocol):
    @property
    def memory(self) -> CoreMemory: ...

    def conversation_search(
        self,
        query: str,
        *,
        roles: list[str] | None,
        limit: int | None,
        start_date: str | None,
        end_date: str | None,
    ) -> dict[str, Any]: ...

    def archival_memory_insert(self, content: str, *, tags: list[str] | None) -> str: ...

    def archival_memory_search(
        self,
        query: str,
        *,
        tags: list[str] | None,
        tag_match_mode: str,
        top_k: int | None,
        start_datetime: str | None,
        end_datetime: str | None,
    ) -> list[dict[str, Any]]: ...

    def run_code(self, code: str, language: str, *, with_tools: bool) -> str:
        """Letta's run_code answer for the code, run in the tool sandbox."""
        ...

    def web_search(self, query: str, **options: Any) -> str:
        """Letta's web_search answer (Exa), with the agent's or the server's key."""
        ...

    def fetch_webpage(self, url: str) -> str:
        """A page's text, fetched under the outbound-address policy."""
        ...

    def run_mcp_tool(self, tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
        """{"success", "result"} of a call of the organization's MCP server."""
        ...

    def run_custom_tool(self, tool: Tool, args: dict[str, Any], tool_call_id: str) -> SandboxResult:
        """Run user code in the sandbox; never in this process."""
        ...
