"""Stored messages as the provider-neutral entries (one a message, or a tool result) both request
builders start from."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from cairn.domain.constants import TOOL_RETURN_PER_REQUEST_CHAR_LIMIT
from cairn.domain.messages import (
    ImageContent,
    Message,
    ReasoningContent,
    TextContent,
    ToolCall,
)


@dataclass
class Entry:
    role: str  # system | user | assistant | tool
    text: str = ""
    reasoning: list[ReasoningContent] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    # A user's images, (media type, base64 data) (each provider's own form), and with them
    # the message's parts in the order they were sent: texts and images.
    images: list[tuple[str, str]] = field(default_factory=list)
    pieces: list[str | tuple[str, str]] = field(default_factory=list)


def clip(text: str, limit: int = TOOL_RETURN_PER_REQUEST_CHAR_LIMIT) -> str:
    # Stored returns keep up to the tool's own limit; each request sends a shorter cut.
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [cut: {len(text) - limit} more characters]"


def call_arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as the object providers take back (the model's own JSON; anything
    that is not an object, as none)."""
    try:
        arguments = json.loads(call.function.arguments or "{}")
    except ValueError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


def merged(pairs: Iterable[tuple[str, list[Any]]], opener: Any) -> list[tuple[str, list[Any]]]:
    """(role, parts) turns as providers that want `user` and the model's turns to alternate
    take them: consecutive turns of one role are one turn (the results of parallel calls
    share a user entry), empty ones are dropped, and a history that opens with the model's
    turn (a chat agent's startup call) gets `opener` as a user turn before it."""
    out: list[tuple[str, list[Any]]] = []
    for role, parts in pairs:
        if not parts:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(parts)
        else:
            out.append((role, list(parts)))
    if out and out[0][0] != "user":
        out.insert(0, ("user", [opener]))
    return out


def images_of(message: Message) -> list[tuple[str, str]]:
    return [piece for piece in pieces_of(message) if isinstance(piece, tuple)]


def pieces_of(message: Message) -> list[str | tuple[str, str]]:
    """The message's texts and base64 images, in the order they were sent."""
    out: list[str | tuple[str, str]] = []
    for p in message.content:
        if isinstance(p, TextContent) and p.text:
            out.append(p.text)
        elif isinstance(p, ImageContent) and p.source.get("type") == "base64":
            out.append((str(p.source["media_type"]), str(p.source["data"])))
    return out


def entries(messages: Sequence[Message]) -> Iterator[Entry]:
    for message in messages:
        reasoning = [p for p in message.content if isinstance(p, ReasoningContent)]
        if message.role in ("assistant", "approval") and message.tool_calls:
            # An approval request is the model's own tool call, waiting for a person.
            yield Entry("assistant", message.text, reasoning, list(message.tool_calls))
        elif message.role == "assistant":
            yield Entry("assistant", message.text, reasoning)
        elif message.role == "tool":
            for ret in message.tool_returns or ():
                yield Entry("tool", clip(ret.func_response or ""), tool_call_id=ret.tool_call_id)
        elif message.role in ("system", "user"):
            pieces = pieces_of(message)
            images = [piece for piece in pieces if isinstance(piece, tuple)]
            yield Entry(message.role, message.text, images=images, pieces=pieces if images else [])
        # An approval response carries decisions, not text: its results follow as tool turns.
