"""Stored messages as LettaMessages: one stored message can become several sharing
its id (reasoning, then the tool call), exactly as a 0.16.1 server expands them."""

from __future__ import annotations

import json
from typing import Any

from cairn.api.letta.times import message_date
from cairn.domain.messages import ImageContent, Message, ReasoningContent, TextContent, ToolCall

ASSISTANT_TOOL = "send_message"


ASSISTANT_KWARG = "message"


def _call(call: ToolCall) -> dict[str, Any]:
    return {
        "name": call.function.name,
        "arguments": call.function.arguments,
        "tool_call_id": call.id,
    }


def _assistant_text(call: ToolCall) -> str | None:
    try:
        arguments = json.loads(call.function.arguments or "{}")
    except ValueError:
        return None
    text = arguments.get(ASSISTANT_KWARG) if isinstance(arguments, dict) else None
    return text if isinstance(text, str) else None


def tool_return_text(func_response: str | None) -> str:
    """The tool's own return, out of the `{"status", "message", "time"}` envelope the model
    reads. Letta shows `str()` of it, so a dict return reads as Python's repr (fixture A's
    conversation_search); a return that is no envelope is shown as stored."""
    text = func_response or ""
    try:
        packet = json.loads(text)
    except ValueError:
        return text
    if not isinstance(packet, dict) or "message" not in packet:
        return text
    value = packet["message"]
    return value if isinstance(value, str) else str(value)


def _user_content(message: Message) -> Any:
    """Text alone as a string, as Letta shows it; with images, Letta's parts."""
    if not any(isinstance(p, ImageContent) for p in message.content):
        return message.text
    return [
        {"type": "text", "text": p.text}
        if isinstance(p, TextContent)
        else {"type": "image", "source": p.source}
        for p in message.content
        if isinstance(p, (TextContent, ImageContent))
    ]


# Complexity: one branch per Letta message type a stored message becomes (Letta's own
# mapping has the same shape), kept together so the mapping reads as one table.
def letta_messages(  # noqa: C901
    message: Message, *, use_assistant_message: bool = True
) -> list[dict[str, Any]]:
    base: dict[str, Any] = {
        "id": message.id,
        "date": message_date(message.created_at),
        "name": message.name,
        "otid": message.otid,
        "sender_id": message.sender_id,
        "step_id": message.step_id,
        "run_id": message.run_id,
        "seq_id": message.sequence_id,
    }
    if message.is_err:
        base["is_err"] = True
    if message.rewound_at is not None:  # Cairn's own: out of the agent's history by a rewind
        base["rewound_at"] = message_date(message.rewound_at)

    def out(kind: str, **fields: Any) -> dict[str, Any]:
        return {**base, "message_type": kind, **fields}

    role = message.role
    if role == "system":
        return [out("system_message", content=message.text)]
    if role == "user":
        return [out("user_message", content=_user_content(message))]
    if role == "tool":
        returns = [r for r in message.tool_returns or ()]
        if not returns:
            return []
        first = returns[0]
        return [
            out(
                "tool_return_message",
                tool_return=tool_return_text(first.func_response),
                status=first.status,
                tool_call_id=first.tool_call_id,
                stdout=first.stdout,
                stderr=first.stderr,
                name=message.name,
                tool_returns=[
                    {
                        "type": "tool",
                        "tool_call_id": r.tool_call_id,
                        "tool_return": tool_return_text(r.func_response),
                        "status": r.status,
                        "stdout": r.stdout,
                        "stderr": r.stderr,
                    }
                    for r in returns
                ],
            )
        ]
    if role == "approval" and not message.tool_calls:
        approvals = [a.model_dump(mode="json") for a in message.approvals or ()]
        first_approval = message.approvals[0] if message.approvals else None
        return [
            out(
                "approval_response_message",
                approvals=approvals,
                approve=first_approval.approve if first_approval else message.approve,
                approval_request_id=first_approval.tool_call_id
                if first_approval
                else message.approval_request_id,
                reason=first_approval.reason if first_approval else message.denial_reason,
            )
        ]
    items: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ReasoningContent):
            items.append(
                out(
                    "reasoning_message",
                    reasoning=part.reasoning,
                    signature=part.signature,
                    source="reasoner_model" if part.is_native else "non_reasoner_model",
                )
            )
    calls = list(message.tool_calls or ())
    if role == "approval":
        items.append(
            out(
                "approval_request_message",
                tool_call=_call(calls[0]),
                tool_calls=[_call(c) for c in calls],
            )
        )
        return items
    for part in message.content:
        if isinstance(part, TextContent) and part.text:
            items.append(out("assistant_message", content=part.text))
    plain = []
    for call in calls:
        text = _assistant_text(call) if call.function.name == ASSISTANT_TOOL else None
        if use_assistant_message and text is not None:
            items.append(out("assistant_message", content=text))
        else:
            plain.append(call)
    if plain:
        items.append(
            out(
                "tool_call_message", tool_call=_call(plain[0]), tool_calls=[_call(c) for c in plain]
            )
        )
    return items


def hides_return(message: Message, send_message_calls: set[str]) -> bool:
    """send_message's own return is plumbing: Letta shows the call as assistant text only."""
    return message.role == "tool" and all(
        r.tool_call_id in send_message_calls for r in message.tool_returns or ()
    )


def edited_json(message: Message, message_type: str) -> dict[str, Any]:
    """The LettaMessage a message PATCH answers: the edited one of the message's kinds."""
    shown = letta_messages(message)
    return next((m for m in shown if m["message_type"] == message_type), shown[0])


def expand(messages: list[Message], *, use_assistant_message: bool = True) -> list[dict[str, Any]]:
    send_calls = {
        c.id for m in messages for c in m.tool_calls or () if c.function.name == ASSISTANT_TOOL
    }
    out: list[dict[str, Any]] = []
    for m in messages:
        if use_assistant_message and hides_return(m, send_calls):
            continue
        out.extend(letta_messages(m, use_assistant_message=use_assistant_message))
    return out


def message_json(message: Message) -> dict[str, Any]:
    """Letta's Message (the stored form, not a LettaMessage)."""
    return message.model_dump(mode="json", exclude={"organization_id", "sequence_id"})
