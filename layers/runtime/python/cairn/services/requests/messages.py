"""Sending, capturing, searching and editing messages; batches; a step's feedback."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from cairn.domain.constants import (
    DEFAULT_MAX_STEPS,
    MAX_BATCH_REQUESTS,
    MAX_CAPTURE_MESSAGES,
    MAX_MESSAGE_CHARS,
)
from cairn.domain.ids import AgentId, MessageId
from cairn.domain.messages import ApprovalDecision
from cairn.services.requests.base import RequestBody

# The text of one message, as a string (parts are held to the same limit one by one).
MessageText = Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]


class TextPart(RequestBody):
    type: Literal["text"] = "text"
    text: str = Field(max_length=MAX_MESSAGE_CHARS)


class ImagePart(RequestBody):
    """Letta's ImageContent: its `source` is checked (and a URL fetched) when it is sent
    (services/images.py)."""

    type: Literal["image"]
    source: dict[str, Any]


class MessageCreate(RequestBody):
    """A MessageCreate or an ApprovalCreate (told apart by `type`, as Letta does)."""

    type: Literal["message", "approval"] | None = None
    role: Literal["user", "system", "assistant"] = "user"
    content: MessageText | list[TextPart | ImagePart] | None = None
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
        return "".join(p.text for p in self.content or () if isinstance(p, TextPart))

    @property
    def images(self) -> list[ImagePart]:
        return [p for p in self.content or () if isinstance(p, ImagePart)]


class LettaRequest(RequestBody):
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


class RetrieveStream(RequestBody):
    starting_after: int = Field(default=0, ge=0)
    include_pings: bool | None = True
    poll_interval: float | None = Field(default=0.1, ge=0)
    batch_size: int | None = Field(default=100, ge=1)


class LettaBatchRequest(LettaRequest):
    agent_id: AgentId


class CreateBatch(RequestBody):
    requests: list[LettaBatchRequest] = Field(min_length=1, max_length=MAX_BATCH_REQUESTS)
    callback_url: str | None = Field(default=None, min_length=1, max_length=2083)


class CapturedMessage(RequestBody):
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


class CaptureRequest(RequestBody):
    messages: list[CapturedMessage] = Field(min_length=1, max_length=MAX_CAPTURE_MESSAGES)
    add_to_context: bool = False


class CancelRequest(RequestBody):
    run_ids: list[str] | None = None


class MessageSearch(RequestBody):
    query: str | None = None
    search_mode: Literal["vector", "fts", "hybrid"] = "hybrid"
    roles: list[Literal["user", "assistant", "system", "tool", "approval"]] | None = None
    agent_id: AgentId | None = None
    limit: int = Field(default=50, ge=1, le=100)
    start_date: datetime | None = None
    end_date: datetime | None = None


class MessageUpdate(RequestBody):
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


class StepFeedback(RequestBody):
    feedback: Literal["positive", "negative"] | None = None
    tags: list[str] | None = None
