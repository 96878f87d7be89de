"""Agents' and blocks' request bodies, and the model settings an agent takes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from cairn.domain.agents import check_coalesce
from cairn.domain.configs import CompactionSettings, EmbeddingConfig, LLMConfig, ReasoningEffort
from cairn.domain.constants import (
    CORE_MEMORY_BLOCK_CHAR_LIMIT,
    MAX_BLOCK_CHARS,
    MIN_CONTEXT_WINDOW,
)
from cairn.domain.ids import BlockId, IdentityId, ToolId
from cairn.domain.tool_rules import ToolRules
from cairn.services.requests.base import RequestBody


class CreateBlock(RequestBody):
    label: str
    value: str = Field(max_length=MAX_BLOCK_CHARS)
    limit: int = Field(default=CORE_MEMORY_BLOCK_CHAR_LIMIT, ge=1, le=MAX_BLOCK_CHARS)
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    read_only: bool = False
    hidden: bool = False

    @model_validator(mode="after")
    def _fits(self) -> CreateBlock:
        if len(self.value) > self.limit:
            raise ValueError(
                f"Value length ({len(self.value)} characters) exceeds block limit "
                f"({self.limit} characters)"
            )
        return self


class BlockUpdate(RequestBody):
    value: str | None = Field(default=None, max_length=MAX_BLOCK_CHARS)
    limit: int | None = Field(default=None, ge=1, le=MAX_BLOCK_CHARS)
    label: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    read_only: bool | None = None
    hidden: bool | None = None


class _Reasoning(RequestBody):
    reasoning_effort: ReasoningEffort = "minimal"


class _Thinking(RequestBody):
    type: Literal["enabled", "disabled"] = "enabled"
    budget_tokens: int = Field(default=1024, ge=0)


class _ThinkingConfig(RequestBody):
    include_thoughts: bool = True
    thinking_budget: int = Field(default=1024, ge=0)


class ModelSettings(RequestBody):
    """Letta's model settings of any provider type, as one body: what each type has."""

    provider_type: str | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    parallel_tool_calls: bool | None = None
    reasoning: _Reasoning | None = None
    thinking: _Thinking | None = None
    thinking_config: _ThinkingConfig | None = None
    response_format: dict[str, Any] | None = None
    response_schema: dict[str, Any] | None = None
    verbosity: str | None = None
    effort: str | None = None

    def given(self) -> dict[str, Any]:
        """The fields the client set (an object it set, whole, with its defaults)."""
        return {name: self.model_dump()[name] for name in self.model_fields_set}


class CreateAgent(RequestBody):
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    agent_type: str = "letta_v1_agent"
    system: str | None = None
    memory_blocks: list[CreateBlock] = Field(default_factory=list)
    block_ids: list[BlockId] = Field(default_factory=list)
    tool_ids: list[ToolId] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)
    include_base_tools: bool = True
    include_base_tool_rules: bool | None = None
    tool_rules: ToolRules | None = None
    model: str | None = None
    llm_config: LLMConfig | None = None
    context_window_limit: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW)
    max_tokens: int | None = Field(default=None, ge=1)
    # Letta's deprecated reasoning fields, still honoured as its server does.
    max_reasoning_tokens: int | None = Field(default=None, ge=0)
    enable_reasoner: bool | None = True
    reasoning: bool | None = None
    model_settings: ModelSettings | None = None
    embedding: str | None = None
    embedding_config: EmbeddingConfig | None = None
    compaction_settings: CompactionSettings | None = None
    enable_sleeptime: bool = False
    message_buffer_autoclear: bool = False
    timezone: str = "UTC"
    max_files_open: int | None = None
    per_file_view_window_char_limit: int | None = None
    hidden: bool = False
    identity_ids: list[IdentityId] = Field(default_factory=list)
    # The environment its custom tools get (`tool_exec_environment_variables`: Letta's old
    # name, read where `secrets` is not given).
    secrets: dict[str, str] | None = None
    tool_exec_environment_variables: dict[str, str] | None = None

    _coalesce = field_validator("metadata")(check_coalesce)

    @property
    def given_secrets(self) -> dict[str, str] | None:
        return self.secrets or self.tool_exec_environment_variables


class UpdateAgent(RequestBody):
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    system: str | None = None
    tool_ids: list[ToolId] | None = None
    block_ids: list[BlockId] | None = None
    tool_rules: ToolRules | None = None
    message_ids: list[str] | None = None
    model: str | None = None
    llm_config: LLMConfig | None = None
    context_window_limit: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW)
    max_tokens: int | None = Field(default=None, ge=1)
    reasoning: bool | None = None
    model_settings: ModelSettings | None = None
    embedding_config: EmbeddingConfig | None = None
    compaction_settings: CompactionSettings | None = None
    timezone: str | None = None
    message_buffer_autoclear: bool | None = None
    hidden: bool | None = None
    identity_ids: list[IdentityId] | None = None  # the agent's identities, all of them
    # The whole set of its tools' secrets, replacing the old one. As in Letta an empty
    # `secrets` without `tool_exec_environment_variables` changes nothing.
    secrets: dict[str, str] | None = None
    tool_exec_environment_variables: dict[str, str] | None = None

    _coalesce = field_validator("metadata")(check_coalesce)

    @property
    def given_secrets(self) -> dict[str, str] | None:
        return self.secrets or self.tool_exec_environment_variables


class ResetMessages(RequestBody):
    add_default_initial_messages: bool = False
