"""The inputs of the use cases: Letta's request bodies.

The API declares them as its request schemas; the services take them as they are.

Unknown fields are ignored, as Letta does, so clients that send newer fields keep working.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cairn.domain.configs import CompactionSettings, EmbeddingConfig, LLMConfig, ReasoningEffort
from cairn.domain.constants import (
    CORE_MEMORY_BLOCK_CHAR_LIMIT,
    DEFAULT_MAX_STEPS,
    MAX_BATCH_REQUESTS,
    MAX_BLOCK_CHARS,
    MAX_CAPTURE_MESSAGES,
    MAX_DESCRIPTION_CHARS,
    MAX_GROUP_MEMBERS,
    MAX_GROUP_TURNS,
    MAX_MESSAGE_CHARS,
    MAX_PASSAGE_CHARS,
    MIN_CONTEXT_WINDOW,
)
from cairn.domain.groups import ManagerType
from cairn.domain.identities import IdentityProperty, IdentityType
from cairn.domain.ids import AgentId, ArchiveId, BlockId, IdentityId, MessageId, ToolId
from cairn.domain.messages import ApprovalDecision
from cairn.domain.providers import ProviderType
from cairn.domain.tool_rules import ToolRule


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)


class CreateBlock(_Body):
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


class BlockUpdate(_Body):
    value: str | None = Field(default=None, max_length=MAX_BLOCK_CHARS)
    limit: int | None = Field(default=None, ge=1, le=MAX_BLOCK_CHARS)
    label: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    read_only: bool | None = None
    hidden: bool | None = None


class _Reasoning(_Body):
    reasoning_effort: ReasoningEffort = "minimal"


class _Thinking(_Body):
    type: Literal["enabled", "disabled"] = "enabled"
    budget_tokens: int = Field(default=1024, ge=0)


class _ThinkingConfig(_Body):
    include_thoughts: bool = True
    thinking_budget: int = Field(default=1024, ge=0)


class ModelSettings(_Body):
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


class CreateAgent(_Body):
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
    tool_rules: list[ToolRule] | None = None
    model: str | None = None
    llm_config: LLMConfig | None = None
    context_window_limit: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW)
    max_tokens: int | None = Field(default=None, ge=1)
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


class UpdateAgent(_Body):
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    system: str | None = None
    tool_ids: list[ToolId] | None = None
    block_ids: list[BlockId] | None = None
    tool_rules: list[ToolRule] | None = None
    message_ids: list[str] | None = None
    model: str | None = None
    llm_config: LLMConfig | None = None
    context_window_limit: int | None = Field(default=None, ge=MIN_CONTEXT_WINDOW)
    max_tokens: int | None = Field(default=None, ge=1)
    model_settings: ModelSettings | None = None
    embedding_config: EmbeddingConfig | None = None
    compaction_settings: CompactionSettings | None = None
    timezone: str | None = None
    message_buffer_autoclear: bool | None = None
    hidden: bool | None = None
    identity_ids: list[IdentityId] | None = None  # the agent's identities, all of them


# The text of one message, as a string (parts are held to the same limit one by one).
MessageText = Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]


class TextPart(_Body):
    type: Literal["text"] = "text"
    text: str = Field(max_length=MAX_MESSAGE_CHARS)


class MessageCreate(_Body):
    """A MessageCreate or an ApprovalCreate (told apart by `type`, as Letta does)."""

    type: Literal["message", "approval"] | None = None
    role: Literal["user", "system", "assistant"] = "user"
    content: MessageText | list[TextPart] | None = None
    name: str | None = None
    otid: str | None = None
    sender_id: str | None = None
    approvals: list[ApprovalDecision] | None = None
    approve: bool | None = None
    approval_request_id: str | None = None
    reason: str | None = None

    @model_validator(mode="after")
    def _kind(self) -> MessageCreate:
        if self.type is None:
            carries = self.approve is not None or self.approval_request_id or self.approvals
            self.type = "approval" if carries else "message"
        if self.type == "message" and self.content is None:
            raise ValueError("content: a message needs content")
        return self

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content or ())


class LettaRequest(_Body):
    messages: list[MessageCreate] | None = None
    input: MessageText | list[TextPart] | None = None
    max_steps: int = Field(default=DEFAULT_MAX_STEPS, ge=1)
    use_assistant_message: bool = True
    include_return_message_types: list[str] | None = None
    streaming: bool = False
    stream_tokens: bool = False
    include_pings: bool | None = None
    background: bool = False
    callback_url: str | None = None


class RetrieveStream(_Body):
    starting_after: int = Field(default=0, ge=0)
    include_pings: bool | None = True
    poll_interval: float | None = Field(default=0.1, ge=0)
    batch_size: int | None = Field(default=100, ge=1)


class LettaBatchRequest(LettaRequest):
    agent_id: AgentId


class CreateBatch(_Body):
    requests: list[LettaBatchRequest] = Field(min_length=1, max_length=MAX_BATCH_REQUESTS)
    callback_url: str | None = Field(default=None, min_length=1, max_length=2083)


class CreatePassage(_Body):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    tags: list[str] | None = None
    created_at: datetime | None = None


class ToolCreate(_Body):
    source_code: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    source_type: str = "python"
    json_schema: dict[str, Any] | None = None
    args_json_schema: dict[str, Any] | None = None
    return_char_limit: int | None = Field(default=None, ge=1)
    pip_requirements: list[dict[str, Any]] | None = None
    default_requires_approval: bool = False
    enable_parallel_execution: bool = False


class ApprovalToggle(_Body):
    requires_approval: bool


class CapturedMessage(_Body):
    id: MessageId | None = None  # a client-chosen `message-<uuid4>` makes capture idempotent
    role: Literal["user", "assistant", "system"] = "user"
    content: MessageText | list[TextPart]
    name: str | None = None
    otid: str | None = None
    created_at: datetime | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content)


class CaptureRequest(_Body):
    messages: list[CapturedMessage] = Field(min_length=1, max_length=MAX_CAPTURE_MESSAGES)
    add_to_context: bool = False


class ManagerConfig(_Body):
    """Letta's manager configs (RoundRobinManager, SupervisorManager, ... and their Update
    forms) in one shape: each kind reads the fields it has; services/groups checks that
    the kinds with a manager name one."""

    manager_type: ManagerType = "round_robin"
    manager_agent_id: AgentId | None = None
    max_turns: int | None = Field(default=None, ge=1, le=MAX_GROUP_TURNS)
    termination_token: str | None = None
    sleeptime_agent_frequency: int | None = Field(default=None, ge=1)
    max_message_buffer_length: int | None = Field(default=None, gt=4)
    min_message_buffer_length: int | None = Field(default=None, gt=4)


class GroupCreate(_Body):
    agent_ids: list[AgentId] = Field(max_length=MAX_GROUP_MEMBERS)
    description: str = Field(max_length=MAX_DESCRIPTION_CHARS)
    manager_config: ManagerConfig = Field(default_factory=ManagerConfig)
    project_id: str | None = None
    shared_block_ids: list[BlockId] = Field(default_factory=list, max_length=MAX_GROUP_MEMBERS)
    hidden: bool | None = None


class GroupUpdate(_Body):
    agent_ids: list[AgentId] | None = Field(default=None, max_length=MAX_GROUP_MEMBERS)
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION_CHARS)
    manager_config: ManagerConfig | None = None
    project_id: str | None = None
    shared_block_ids: list[BlockId] | None = Field(default=None, max_length=MAX_GROUP_MEMBERS)


class ResetMessages(_Body):
    add_default_initial_messages: bool = False


class CancelRequest(_Body):
    run_ids: list[str] | None = None


class ArchiveCreate(_Body):
    name: str = Field(min_length=1, max_length=200)
    description: str | None = None
    embedding: str | None = None
    embedding_config: EmbeddingConfig | None = None


class ArchiveUpdate(_Body):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = None


class ArchivePassageCreate(_Body):
    text: str = Field(min_length=1, max_length=MAX_PASSAGE_CHARS)
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None


class PassageSearch(_Body):
    query: str = Field(min_length=1)
    agent_id: AgentId | None = None
    archive_id: ArchiveId | None = None
    tags: list[str] | None = None
    tag_match_mode: Literal["any", "all"] = "any"
    limit: int = Field(default=50, ge=1, le=1000)
    start_date: datetime | None = None
    end_date: datetime | None = None


class ToolUpdate(_Body):
    description: str | None = None
    tags: list[str] | None = None
    source_code: str | None = None
    json_schema: dict[str, Any] | None = None
    args_json_schema: dict[str, Any] | None = None
    return_char_limit: int | None = Field(default=None, ge=1)
    pip_requirements: list[dict[str, Any]] | None = None
    default_requires_approval: bool | None = None
    enable_parallel_execution: bool | None = None


class ToolRunFromSource(_Body):
    source_code: str
    args: dict[str, Any]
    name: str | None = None
    json_schema: dict[str, Any] | None = None


class ToolRun(_Body):
    args: dict[str, Any] = Field(default_factory=dict)


class MessageSearch(_Body):
    query: str | None = None
    search_mode: Literal["vector", "fts", "hybrid"] = "hybrid"
    roles: list[Literal["user", "assistant", "system", "tool", "approval"]] | None = None
    agent_id: AgentId | None = None
    limit: int = Field(default=50, ge=1, le=100)
    start_date: datetime | None = None
    end_date: datetime | None = None


class MessageUpdate(_Body):
    """One of Letta's UpdateSystemMessage, UpdateUserMessage, UpdateReasoningMessage,
    UpdateAssistantMessage, told apart by `message_type`."""

    message_type: Literal[
        "system_message", "user_message", "reasoning_message", "assistant_message"
    ] = "user_message"
    content: str | list[TextPart] | None = None
    reasoning: str | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content or ())


class ToolSearch(_Body):
    query: str | None = None
    search_mode: Literal["vector", "fts", "hybrid"] = "hybrid"
    tool_types: list[str] | None = None
    tags: list[str] | None = None
    limit: int = Field(default=50, ge=1, le=100)


class StepFeedback(_Body):
    feedback: Literal["positive", "negative"] | None = None
    tags: list[str] | None = None


class CodeInput(_Body):
    code: str = Field(max_length=100_000)
    source_type: str | None = None


class _Strict(BaseModel):
    # Letta's provider bodies admit no other keys (additionalProperties false).
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), defer_build=True)


# An endpoint a provider SDK can call: http(s), printable ASCII, no spaces.
BaseUrl = Annotated[str, Field(max_length=2048, pattern=r"^https?://[!-~]+$")]


class _ProviderKey(_Strict):
    api_key: str = Field(min_length=1, max_length=4096)
    access_key: str | None = None
    region: str | None = None
    base_url: BaseUrl | None = None
    api_version: str | None = None


class ProviderCreate(_ProviderKey):
    name: str = Field(min_length=1, max_length=200, pattern=r"^[^/\s]+$")
    provider_type: ProviderType


class ProviderUpdate(_ProviderKey):
    pass


class ProviderCheck(_ProviderKey):
    model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)
    provider_type: ProviderType


IdentityKey = Annotated[str, Field(min_length=1, max_length=500)]


class IdentityCreate(_Strict):
    identifier_key: IdentityKey
    name: IdentityKey
    identity_type: IdentityType
    project_id: str | None = Field(default=None, max_length=500)
    agent_ids: list[AgentId] | None = Field(default=None, max_length=1000)
    block_ids: list[BlockId] | None = Field(default=None, max_length=1000)
    properties: list[IdentityProperty] | None = Field(default=None, max_length=1000)


class IdentityUpsert(IdentityCreate):
    pass


class IdentityUpdate(_Strict):
    identifier_key: IdentityKey | None = None
    name: IdentityKey | None = None
    identity_type: IdentityType | None = None
    agent_ids: list[AgentId] | None = Field(default=None, max_length=1000)
    block_ids: list[BlockId] | None = Field(default=None, max_length=1000)
    properties: list[IdentityProperty] | None = Field(default=None, max_length=1000)
