"""What a built-in tool may use while it runs: the step's memory and its search services.

A protocol, so the tools stay pure: the engine supplies the real thing (Postgres searches,
an embedder), tests supply their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from cairn.domain.tools import Tool
from cairn.memory.edits import CoreMemory
from cairn.tools.sandbox import SandboxResult

# The call a built-in serves while it runs, what keys its effects (an async message to
# another agent); per thread, as parallel built-ins run in a pool.
_call: ContextVar[str | None] = ContextVar("cairn_tool_call", default=None)


@contextmanager
def calling(tool_call_id: str) -> Iterator[None]:
    token = _call.set(tool_call_id)
    try:
        yield
    finally:
        _call.reset(token)


def current_call() -> str:
    call_id = _call.get()
    if call_id is None:
        raise RuntimeError("a built-in that keys its effects by its call ran outside one")
    return call_id


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

    def send_to_agent(self, message: str, agent_id: str) -> str:
        """Letta's send_message_to_agent_async: delivered once the step is committed."""
        ...

    def ask_agents(
        self,
        message: str,
        *,
        agent_ids: list[str] | None = None,
        tags: tuple[list[str], list[str]] | None = None,
    ) -> str:
        """Message other agents (by id, or by tags: match_all, match_some) and wait for their
        replies; Letta's answer text."""
        ...

    def store_memories(self, chunks: list[tuple[int, int, str]]) -> str:
        """Keep (start, end, context) spans of the turn's numbered transcript as passages."""
        ...

    def search_memory(
        self, keywords: list[str], start_minutes_ago: int | None, end_minutes_ago: int | None
    ) -> str:
        """Letta's voice search: archival by the latest user message, recall by keywords."""
        ...

    def open_files(
        self, requests: list[tuple[str, int | None, int | None]], *, close_all_others: bool
    ) -> str:
        """Open (file name, offset, length) windows into the agent's view; Letta's text."""
        ...

    def grep_files(
        self, pattern: str, *, include: str | None, context_lines: int | None, offset: int | None
    ) -> str: ...

    def semantic_search_files(self, query: str, limit: int) -> str: ...

    def schedule_message(
        self, message: str, *, run_at: str | None, cron: str | None, timezone: str | None
    ) -> str:
        """Schedule a message to the agent itself; what it is told."""
        ...

    def run_external_tool(self, tool: Tool, args: dict[str, Any]) -> dict[str, Any]:
        """{"success", "result"} of a call of the organization's MCP server."""
        ...

    def run_custom_tool(self, tool: Tool, args: dict[str, Any], tool_call_id: str) -> SandboxResult:
        """Run user code in the sandbox; never in this process."""
        ...
