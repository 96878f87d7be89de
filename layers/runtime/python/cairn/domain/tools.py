"""Tools: built-in and custom, with their OpenAI-style JSON schema."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.constants import MAX_TOOL_NAME_LENGTH, TOOL_NAME_PATTERN, TOOL_RETURN_CHAR_LIMIT
from cairn.domain.ids import OrgId, ToolId, new_id

ToolType = Literal[
    "custom",
    "letta_core",
    "letta_memory_core",
    "letta_multi_agent_core",
    "letta_sleeptime_core",
    "letta_voice_sleeptime_core",
    "letta_builtin",
    "letta_files_core",
    "external_mcp",
]


class Tool(DomainModel):
    id: ToolId = Field(default_factory=lambda: new_id("tool"))
    organization_id: OrgId
    name: str = Field(min_length=1, max_length=MAX_TOOL_NAME_LENGTH, pattern=TOOL_NAME_PATTERN)
    description: str | None = None
    tool_type: ToolType = "custom"
    source_type: str = "python"
    source_code: str | None = None
    json_schema: dict[str, Any] = Field(default_factory=dict)
    args_json_schema: dict[str, Any] | None = None
    return_char_limit: int = Field(default=TOOL_RETURN_CHAR_LIMIT, ge=1)
    tags: list[str] = Field(default_factory=list)
    pip_requirements: list[dict[str, Any]] | None = None
    npm_requirements: list[dict[str, Any]] | None = None
    default_requires_approval: bool = False
    enable_parallel_execution: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    project_id: str | None = None
    created_by_id: str | None = None
    last_updated_by_id: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


@dataclass(frozen=True)
class ToolFilter:
    """The tools a list or count keeps (GET /v1/tools/ and /count); all by default."""

    name: str | None = None
    names: list[str] | None = None
    tool_ids: list[str] | None = None
    search: str | None = None  # a part of the name, any case
    tool_types: list[str] | None = None
    exclude_tool_types: list[str] | None = None
    only_letta: bool = False  # tool_type letta_*: Letta's own kinds
    no_letta: bool = False
