"""Messages: immutable rows; every one is kept as recall memory."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from cairn.domain.base import DomainModel, Value, utc_now
from cairn.domain.constants import MAX_PROVIDER_TOOL_CALL_ID_LENGTH
from cairn.domain.ids import AgentId, MessageId, OrgId, new_id

Role = Literal["system", "user", "assistant", "tool", "approval"]


class TextContent(Value):
    type: Literal["text"] = "text"
    text: str


class ImageContent(Value):
    type: Literal["image"] = "image"
    source: dict[str, Any]


class ReasoningContent(Value):
    type: Literal["reasoning"] = "reasoning"
    reasoning: str
    is_native: bool = False
    # Anthropic's extended thinking must be sent back with its signature, so it is kept.
    signature: str | None = None


class RedactedReasoningContent(Value):
    type: Literal["redacted_reasoning"] = "redacted_reasoning"
    data: str


class OmittedReasoningContent(Value):
    type: Literal["omitted_reasoning"] = "omitted_reasoning"


ContentPart = Annotated[
    TextContent
    | ImageContent
    | ReasoningContent
    | RedactedReasoningContent
    | OmittedReasoningContent,
    Field(discriminator="type"),
]


class FunctionCall(Value):
    name: str
    arguments: str  # a JSON string, as OpenAI sends it


class ToolCall(Value):
    # Ids Cairn makes keep Letta's 29 characters; providers' own ids (Anthropic's run to
    # 30) are kept as sent, since the provider must see them again unchanged.
    id: str = Field(min_length=1, max_length=MAX_PROVIDER_TOOL_CALL_ID_LENGTH)
    type: Literal["function"] = "function"
    function: FunctionCall


class ToolReturn(Value):
    tool_call_id: str
    status: Literal["success", "error"]
    func_response: str | None = None
    stdout: list[str] | None = None
    stderr: list[str] | None = None


class ApprovalDecision(Value):
    """One answer inside an approval response: approve/deny, or a client-side tool result."""

    type: Literal["approval", "tool"] = "approval"
    tool_call_id: str
    approve: bool | None = None
    reason: str | None = None
    tool_return: str | None = None
    status: Literal["success", "error"] | None = None
    stdout: list[str] | None = None
    stderr: list[str] | None = None


class Message(DomainModel):
    id: MessageId = Field(default_factory=lambda: new_id("message"))
    organization_id: OrgId
    agent_id: AgentId
    role: Role
    content: list[ContentPart] = Field(default_factory=list)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    tool_returns: list[ToolReturn] | None = None
    name: str | None = None
    step_id: str | None = None
    run_id: str | None = None
    group_id: str | None = None
    sender_id: str | None = None
    otid: str | None = None
    batch_item_id: str | None = None
    is_err: bool = False
    model: str | None = None
    approvals: list[ApprovalDecision] | None = None
    approve: bool | None = None
    approval_request_id: str | None = None
    denial_reason: str | None = None
    created_by_id: str | None = None
    created_at: datetime = Field(default_factory=utc_now)
    # Assigned by the database on insert; monotonic per agent because an agent's writes are
    # serialised (see store/messages.py).
    sequence_id: int | None = None
    # When a rewind took it out of the agent's history (services/rewind.py): read by the
    # message listings only (api/letta/messages.py), never written from here nor dumped (a
    # Letta shape has no such field: batches, the context overview, agent files).
    rewound_at: datetime | None = Field(default=None, exclude=True)

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.content if isinstance(p, TextContent))

    def search_text(self) -> str:
        """What recall search matches: the text a person would read, not the plumbing.

        An assistant's `send_message` call is searchable by its message argument. Tool
        returns, heartbeats, login and system alerts, and turns that only call
        `conversation_search`, have no search text: recall leaves them out.
        """
        if self.role in ("tool", "system", "approval"):
            return ""
        calls = [c.function.name for c in self.tool_calls or ()]
        if "conversation_search" in calls:
            return ""
        if self.role == "user" and _is_runtime_packet(self.text):
            return ""
        return "\n".join(self.said())

    def said(self) -> list[str]:
        """Its words: its text and each `send_message` call's message (Letta's assistant
        messages, when the role is assistant)."""
        parts = [self.text] if self.text else []
        for call in self.tool_calls or ():
            if call.function.name == "send_message":
                try:
                    message = json.loads(call.function.arguments).get("message")
                except (ValueError, AttributeError):
                    message = None
                if isinstance(message, str):
                    parts.append(message)
        return parts


_RUNTIME_PACKETS = frozenset({"heartbeat", "login", "system_alert"})


def _is_runtime_packet(text: str) -> bool:
    if not text.startswith("{"):
        return False
    try:
        packet = json.loads(text)
    except ValueError:
        return False
    return isinstance(packet, dict) and packet.get("type") in _RUNTIME_PACKETS
