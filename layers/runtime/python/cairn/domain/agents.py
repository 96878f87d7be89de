"""Agents: the whole state of one memory agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from zoneinfo import available_timezones

from pydantic import Field, field_validator

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.configs import CompactionSettings, EmbeddingConfig, LLMConfig
from cairn.domain.ids import AgentId, OrgId, new_id
from cairn.domain.tool_rules import ToolRules

AgentType = Literal[
    "memgpt_agent",
    "memgpt_v2_agent",
    "letta_v1_agent",
    "react_agent",
    "workflow_agent",
    "split_thread_agent",
    "sleeptime_agent",
    "voice_convo_agent",
    "voice_sleeptime_agent",
]

StopReason = Literal[
    "end_turn",
    "error",
    "llm_api_error",
    "invalid_llm_response",
    "invalid_tool_call",
    "max_steps",
    "max_tokens_exceeded",
    "no_tool_call",
    "tool_rule",
    "cancelled",
    "requires_approval",
    "context_window_overflow_in_system_prompt",
]

_TIMEZONES: frozenset[str] | None = None


def check_timezone(name: str) -> str:
    global _TIMEZONES
    if _TIMEZONES is None:
        _TIMEZONES = frozenset(available_timezones()) | {"UTC"}
    if name not in _TIMEZONES:
        raise ValueError(f"unknown timezone {name!r}: use an IANA name such as 'Europe/Paris'")
    return name


MESSAGE_EMBEDDINGS_KEY = "cairn_message_embeddings"
# Coalescing, Cairn's own setting in `metadata` (off without it): a user's message arriving
# while the agent's previous turn is queued, or within this many seconds of the message that
# started it, joins that turn (store/runs.py START_RUN). Bounded: the first caller waits it.
COALESCE_KEY, MAX_COALESCE_SECONDS = "cairn_coalesce_seconds", 10.0


def check_coalesce(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    """A metadata whose coalescing window, if set, is a number of seconds within bounds."""
    value = (metadata or {}).get(COALESCE_KEY)
    if value is None:
        return metadata
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{COALESCE_KEY}: a number of seconds, not {value!r}")
    if not 0 <= value <= MAX_COALESCE_SECONDS:
        raise ValueError(f"{COALESCE_KEY}: from 0 (off) to {MAX_COALESCE_SECONDS:g} seconds")
    return metadata


class Agent(DomainModel):
    id: AgentId = Field(default_factory=lambda: new_id("agent"))
    organization_id: OrgId
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    agent_type: AgentType = "letta_v1_agent"
    system: str = ""
    # The in-context window; [0] is always the system message.
    message_ids: list[str] = Field(default_factory=list)
    llm_config: LLMConfig
    embedding_config: EmbeddingConfig | None = None
    compaction_settings: CompactionSettings | None = None
    tool_rules: ToolRules = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    timezone: str = "UTC"
    max_files_open: int | None = Field(default=None, ge=1)
    per_file_view_window_char_limit: int | None = Field(default=None, ge=1)
    enable_sleeptime: bool = False
    message_buffer_autoclear: bool = False
    hidden: bool = False
    project_id: str | None = None
    last_run_completion: datetime | None = None
    last_run_duration_ms: int | None = None
    last_stop_reason: StopReason | None = None
    created_by_id: str | None = None
    last_updated_by_id: str | None = None
    # The provider's last count of the context and how many message_ids it covered.
    context_tokens: int | None = None
    context_tokens_upto: int | None = None
    # Optimistic concurrency: every checkpoint bumps it and names the one it started from.
    version: int = 1
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        return check_timezone(value)

    @property
    def message_embeddings(self) -> bool:
        """Whether its messages are embedded for semantic recall (the default). Cairn's own
        setting, kept in `metadata` so Letta's clients carry it unchanged:
        `metadata={"cairn_message_embeddings": false}` makes recall search full text only."""
        return self.metadata.get(MESSAGE_EMBEDDINGS_KEY) is not False


@dataclass(frozen=True)
class AgentFilter:
    """The agents a list or count keeps (GET /v1/agents/ and /count); all by default."""

    name: str | None = None
    query_text: str | None = None  # a part of the name, any case
    tags: list[str] | None = None
    match_all_tags: bool = False
    identity_id: str | None = None
    identifier_keys: list[str] | None = None
    last_stop_reason: str | None = None


def file_limits(context_window: int | None) -> tuple[int, int]:
    """Letta's defaults by context window (calculate_file_defaults_based_on_context_window):
    (max_files_open, per_file_view_window_char_limit)."""
    if not context_window:
        return 5, 15_000
    for upto, limits in (
        (8_000, (3, 5_000)),
        (32_000, (5, 15_000)),
        (128_000, (10, 25_000)),
        (200_000, (10, 40_000)),
    ):
        if context_window <= upto:
            return limits
    return 15, 40_000
