"""The messages a new agent starts with, per agent type.

Chat agents open with a `send_message` call and its return, so the model has seen the
calling convention once, then a login event. `letta_v1_agent` needs no such priming, and a
sleeptime agent never talks to a user, so it gets no startup call.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.messages import FunctionCall, Message, TextContent, ToolCall, ToolReturn
from cairn.memory import packaging

STARTUP_THOUGHT = "Memory loaded and persona in place. Checking that messaging works."
STARTUP_MESSAGE = "Hello! I'm ready when you are."
_NO_STARTUP_CALL = frozenset({"sleeptime_agent", "voice_sleeptime_agent"})


def tool_call_id() -> str:
    """A call id within Letta's 29-character limit."""
    return f"call_{uuid.uuid4().hex[:24]}"


def initial_messages(agent: Agent, system_text: str, *, now: datetime) -> list[Message]:
    """System message first (always), then the startup exchange and login for chat agents."""

    def message(**fields: object) -> Message:
        return Message(
            organization_id=agent.organization_id,
            agent_id=agent.id,
            created_at=now,
            **fields,
        )

    tz = agent.timezone
    system = message(role="system", content=[TextContent(text=system_text)])
    if agent.agent_type == "letta_v1_agent":
        return [system]
    login = message(role="user", content=[TextContent(text=packaging.login(now=now, timezone=tz))])
    if agent.agent_type in _NO_STARTUP_CALL:
        return [system, login]
    call_id = tool_call_id()
    call = ToolCall(
        id=call_id,
        function=FunctionCall(
            name="send_message", arguments=json.dumps({"message": STARTUP_MESSAGE})
        ),
    )
    result = packaging.tool_return(
        packaging.SEND_MESSAGE_RESULT, success=True, now=now, timezone=tz
    )
    return [
        system,
        message(role="assistant", content=[TextContent(text=STARTUP_THOUGHT)], tool_calls=[call]),
        message(
            role="tool",
            name="send_message",
            tool_call_id=call_id,
            content=[TextContent(text=result)],
            tool_returns=[ToolReturn(tool_call_id=call_id, status="success", func_response=result)],
        ),
        login,
    ]
