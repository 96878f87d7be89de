"""Letta's multi-agent tools, the step's side: what the other agent is told, which agents a
tag match reaches, and what the sender reads back.

An async send is an outbox command in the sender's checkpoint (`agent_message_command`): it
starts the other agent's run once, whatever crashes. A send that waits for the reply runs
the other agent's turn through `Messenger` (`sending.py`, its sending side, handed to the step
by what drives it) under a run id derived from the call, so a step delivered again finds the run it
started instead of starting another, and its result is journaled like a custom tool's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from cairn.domain.ids import stable_id
from cairn.domain.messages import Message, TextContent
from cairn.domain.runs import Run

# Letta 0.16.1's words (letta/services/tool_executor/multi_agent_tool_executor.py): the
# other agent is told who wrote and how to answer.
_WAIT = (
    "[Incoming message from agent with ID '{sender}' - to reply to this message, make sure to "
    "use the 'send_message' at the end, and the system will notify the sender of your "
    "response] {message}"
)
_ASYNC = (
    "[Incoming message from agent with ID '{sender}' - to reply to this message, make sure to "
    "use the 'send_message_to_agent_async' tool, or the agent will not receive your message] "
    "{message}"
)
_TAGS = (
    "[Incoming message from external Letta agent - to reply to this message, make sure to "
    "use the 'send_message' at the end, and the system will notify the sender of your "
    "response] {message}"
)
SENT = "Successfully sent message"
NO_RESPONSE = "<no response>"
# Letta's tag match lists at most this many agents (list_agents_matching_tags_async).
TAG_MATCH_LIMIT = 50
RUN_TYPE = "agent_send_message_to_agent"


def async_text(sender_id: str, message: str) -> str:
    return _ASYNC.format(sender=sender_id, message=message)


def wait_text(sender_id: str, message: str) -> str:
    return _WAIT.format(sender=sender_id, message=message)


def tags_text(message: str) -> str:
    return _TAGS.format(message=message)


def incoming(org_id: str, agent_id: str, text: str, sender_name: str) -> Message:
    """The other agent's input: a system message named by its sender, as Letta sends it."""
    return Message(
        organization_id=org_id,
        agent_id=agent_id,
        role="system",
        content=[TextContent(text=text)],
        name=sender_name,
    )


def child_run_id(run_id: str, key: str, agent_id: str) -> str:
    """The run a waiting send starts on `agent_id`: the same for the same call."""
    return stable_id("run", run_id, key, agent_id)


def metadata(sender_agent_id: str, sender_run_id: str) -> dict[str, Any]:
    """The metadata of a run an agent's message started (Letta's run_type, and who sent it)."""
    return {
        "run_type": RUN_TYPE,
        "sender_agent_id": sender_agent_id,
        "sender_run_id": sender_run_id,
    }


@dataclass(frozen=True)
class Reply:
    """How another agent's run ended, as the sender reads it."""

    agent_id: str
    run: Run | None  # None: it could not be started (`error` says why)
    messages: list[Message]
    error: str | None = None
    error_type: str | None = None


class Messenger(Protocol):
    """Runs another agent's turn on a message and waits (within `budget_seconds`) for it."""

    def ask(
        self,
        org_id: str,
        agent_id: str,
        inputs: list[Message],
        *,
        run_id: str,
        metadata: dict[str, Any],
        budget_seconds: float,
    ) -> Reply: ...


def said(messages: list[Message]) -> list[str]:
    """What an agent said in a run: its assistant text and its send_message words (Letta's
    assistant messages)."""
    return [text for m in messages if m.role == "assistant" for text in m.said()]


def shown(reply: Reply, budget_seconds: float) -> dict[str, Any]:
    """One agent's entry in the sender's result, in Letta's shape ({agent_id, response} or
    {agent_id, error, type})."""
    if reply.error is not None:
        return {"agent_id": reply.agent_id, "error": reply.error, "type": reply.error_type}
    run = reply.run
    assert run is not None
    if run.status in ("created", "running"):
        return {
            "agent_id": reply.agent_id,
            "error": f"No reply within {budget_seconds:.0f} seconds; the agent's run {run.id} "
            "goes on, and what it says stays in its own history.",
            "type": "TimeoutError",
        }
    if run.status != "completed":
        detail = (run.error or {}).get("message") or run.stop_reason or run.status
        return {
            "agent_id": reply.agent_id,
            "error": f"The agent's run {run.id} ended {run.status}: {detail}",
            "type": "RunFailed",
        }
    return {"agent_id": reply.agent_id, "response": said(reply.messages) or [NO_RESPONSE]}
