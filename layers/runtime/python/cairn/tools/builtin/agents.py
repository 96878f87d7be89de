"""Letta's multi-agent tools: messages to other agents of the organization.

Their descriptions are Letta 0.16.1's, word for word (`letta_words`).
"""

from __future__ import annotations

from cairn.tools.context import ToolContext


def send_message_to_agent_async(ctx: ToolContext, message: str, other_agent_id: str) -> str:
    """Send a message to another agent without waiting for its reply.

    Args:
        message: The content of the message to be sent to the target agent.
        other_agent_id: The unique identifier of the target Letta agent.
    """
    return ctx.send_to_agent(message, other_agent_id)


def send_message_to_agent_and_wait_for_reply(
    ctx: ToolContext, message: str, other_agent_id: str
) -> str:
    """Send a message to another agent and wait for its reply.

    Args:
        message: The content of the message to be sent to the target agent.
        other_agent_id: The unique identifier of the target Letta agent.
    """
    return ctx.ask_agents(message, agent_ids=[other_agent_id])


def send_message_to_agents_matching_tags(
    ctx: ToolContext, message: str, match_all: list[str], match_some: list[str]
) -> str:
    """Send a message to the agents with matching tags and wait for their replies.

    Args:
        message: The content of the message to be sent to each matching agent.
        match_all: A list of tags that an agent must possess to receive the message.
        match_some: A list of tags where an agent must have at least one to qualify.
    """
    return ctx.ask_agents(message, tags=(match_all, match_some))
