"""The ToolContext a step hands to built-in tools: its core memory and its searches."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from cairn.domain.messages import Message
from cairn.domain.passages import Archive, Passage
from cairn.domain.tools import Tool
from cairn.engine.state import StepState
from cairn.memory.edits import CoreMemory, MemoryEditError
from cairn.memory.render import letta_time
from cairn.store import archives, messages
from cairn.store.db import Database
from cairn.tools.sandbox import (
    DEFAULT_TIMEOUT_SECONDS,
    Sandbox,
    SandboxRequest,
    SandboxResult,
    SubprocessSandbox,
)
from cairn.tools.source import takes_agent_state

DEFAULT_SEARCH_LIMIT = 5


@dataclass
class StepToolContext:
    state: StepState
    db: Database
    now: datetime
    memory: CoreMemory
    sandbox: Sandbox = field(default_factory=SubprocessSandbox)
    tool_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    new_passages: list[Passage] = field(default_factory=list)
    new_archive: Archive | None = None

    # -- custom tools -------------------------------------------------------------------

    def run_custom_tool(self, tool: Tool, args: dict[str, Any], tool_call_id: str) -> SandboxResult:
        source = tool.source_code or ""
        agent_state = None
        if takes_agent_state(source, tool.name):
            # What Letta hands such a tool: the agent and its memory, as plain data.
            agent_state = {
                **self.state.agent.model_dump(
                    mode="json", include={"id", "name", "agent_type", "tags", "metadata"}
                ),
                "memory": {b.label: b.value for b in self.memory.blocks.values()},
            }
        timeout = float(tool.metadata.get("timeout_seconds") or self.tool_timeout_seconds)
        return self.sandbox.run(
            SandboxRequest(
                source=source,
                name=tool.name,
                args=args,
                tool_call_id=tool_call_id,
                agent_state=agent_state,
                timeout_seconds=timeout,
            )
        )

    # -- recall -----------------------------------------------------------------------

    def conversation_search(
        self,
        query: str,
        *,
        roles: list[str] | None,
        limit: int | None,
        start_date: str | None,
        end_date: str | None,
    ) -> dict[str, Any]:
        tz = self.state.agent.timezone
        wanted = limit or DEFAULT_SEARCH_LIMIT
        with self.db.connection() as conn:
            found = messages.search_text(
                conn,
                self.state.org_id,
                self.state.agent.id,
                query,
                roles=[r for r in roles or () if r != "tool"] or None,
                start=parse_when(start_date, tz),
                end=parse_when(end_date, tz, end=True),
                limit=wanted * 3,  # room for the plumbing filtered out below
            )
        results = [self._result(m, tz) for m in found if _is_conversation(m)][:wanted]
        return {"message": f"Showing {len(results)} results:", "results": results}

    def _result(self, message: Message, tz: str) -> dict[str, Any]:
        return {
            "timestamp": letta_time(message.created_at, tz),
            "time_ago": _ago(self.now - message.created_at),
            "role": message.role,
            "relevance": {
                "search_mode": "fts",
                "rrf_score": None,
                "vector_rank": None,
                "fts_rank": None,
            },
            "content": message.search_text(),
        }

    # -- archival ---------------------------------------------------------------------

    def _archive(self) -> Archive:
        archive = self.state.archive or self.new_archive
        if archive is None:
            archive = Archive(
                organization_id=self.state.org_id,
                name=f"{self.state.agent.name} archive",
                embedding_config=self.state.agent.embedding_config,
            )
            self.new_archive = archive
        return archive

    def archival_memory_insert(self, content: str, *, tags: list[str] | None) -> str:
        if not content.strip():
            raise MemoryEditError("`content` must not be empty.")
        self.new_passages.append(
            Passage(
                organization_id=self.state.org_id,
                archive_id=self._archive().id,
                text=content,
                tags=sorted(set(tags or ())),
                created_at=self.now,
            )
        )
        return "Stored in archival memory."

    def archival_memory_search(
        self,
        query: str,
        *,
        tags: list[str] | None,
        tag_match_mode: str,
        top_k: int | None,
        start_datetime: str | None,
        end_datetime: str | None,
    ) -> list[dict[str, Any]]:
        archive = self.state.archive
        if archive is None:
            return []
        tz = self.state.agent.timezone
        with self.db.connection() as conn:
            found = archives.search_passages_text(
                conn,
                self.state.org_id,
                archive.id,
                query,
                tags=tags,
                match_all=tag_match_mode == "all",
                start=parse_when(start_datetime, tz),
                end=parse_when(end_datetime, tz, end=True),
                limit=top_k or DEFAULT_SEARCH_LIMIT,
            )
        return [
            {
                "timestamp": letta_time(p.created_at, tz),
                "content": p.text,
                "tags": p.tags,
                "relevance": {"search_mode": "fts"},
            }
            for p in found
        ]


def parse_when(value: str | None, timezone: str, *, end: bool = False) -> datetime | None:
    """`YYYY-MM-DD` or an ISO datetime; naive ones are in the agent's timezone."""
    if not value:
        return None
    tz = ZoneInfo(timezone)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            return datetime.combine(day, time.max if end else time.min, tzinfo=tz)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise MemoryEditError(
            f"`{value}` is not a date: use YYYY-MM-DD or an ISO datetime."
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=tz)


def _is_conversation(message: Message) -> bool:
    """Recall results leave out tool plumbing, heartbeats and earlier searches."""
    if message.role in ("tool", "system", "approval"):
        return False
    if message.role == "user":
        try:
            packet = json.loads(message.text)
        except ValueError:
            return True
        return not (
            isinstance(packet, dict)
            and packet.get("type") in ("heartbeat", "login", "system_alert")
        )
    calls = [c.function.name for c in message.tool_calls or ()]
    return "conversation_search" not in calls


def _ago(delta: timedelta) -> str:
    seconds = max(int(delta.total_seconds()), 0)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if n > 1 else ''} ago"
    return "just now"
