"""Stored messages as the provider-neutral turns both request builders start from."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from cairn.domain.constants import TOOL_RETURN_PER_REQUEST_CHAR_LIMIT
from cairn.domain.messages import Message, ReasoningContent, ToolCall


@dataclass
class Turn:
    role: str  # system | user | assistant | tool
    text: str = ""
    reasoning: list[ReasoningContent] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None


def clip(text: str, limit: int = TOOL_RETURN_PER_REQUEST_CHAR_LIMIT) -> str:
    # Stored returns keep up to the tool's own limit; each request sends a shorter cut.
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text) - limit} more characters]"


def turns(messages: Sequence[Message]) -> Iterator[Turn]:
    for message in messages:
        reasoning = [p for p in message.content if isinstance(p, ReasoningContent)]
        if message.role in ("assistant", "approval") and message.tool_calls:
            # An approval request is the model's own tool call, waiting for a person.
            yield Turn("assistant", message.text, reasoning, list(message.tool_calls))
        elif message.role == "assistant":
            yield Turn("assistant", message.text, reasoning)
        elif message.role == "tool":
            for ret in message.tool_returns or ():
                yield Turn("tool", clip(ret.func_response or ""), tool_call_id=ret.tool_call_id)
        elif message.role in ("system", "user"):
            yield Turn(message.role, message.text)
        # An approval response carries decisions, not text: its results follow as tool turns.
