"""Sleeptime agents: a background agent that keeps a primary's memory.

Creating a primary with `enable_sleeptime` builds, as Letta does, a `<name>-sleeptime`
agent of type `sleeptime_agent` that shares the primary's blocks (plus a persona block of
its own) and a `sleeptime` group managed by the primary. Every `sleeptime_agent_frequency`
turns the primary's checkpoint starts the sleeptime workflow: `plan` lists the group's
sleeptime agents, each gets `transcript_message` as a background run, and `finish` records
how far the transcript was read.
"""

from __future__ import annotations

from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.groups import Group
from cairn.domain.messages import Message, TextContent
from cairn.run.agents import provision_agent
from cairn.store import agents, blocks, groups, messages
from cairn.store.db import Database

DEFAULT_FREQUENCY = 5
SLEEPTIME_PERSONA = (
    "I am the background memory keeper of the agent I serve. I read its conversations and "
    "keep our shared memory blocks accurate, concise and free of duplicates."
)


# As in Letta: the sleeptime agent is told it is not the primary and only keeps memory.
REMINDER = """<system-reminder>
You are a sleeptime agent: a background agent that reviews a conversation after it happened.
You are NOT the primary agent. Messages labeled "assistant" are from the primary agent, not
you; messages labeled "user" are from the primary agent's user.
Your only role is memory management: update the memory blocks with what is worth keeping,
then call memory_finish_edits. Check your memory_persona block for your own policies.
</system-reminder>

Messages:
"""
# The longest transcript one sleeptime run reads (later lines go to the next run).
MAX_TRANSCRIPT_MESSAGES = 500


def transcript_lines(history: list[Message]) -> list[str]:
    lines = []
    for message in history:
        if text := message.search_text():
            lines.append(f"{message.role}: {text}")
        for call in message.tool_calls or ():
            if call.function.name != "send_message":
                lines.append(f"assistant: called tool {call.function.name}")
    return lines


def plan(
    db: Database, org_id: str, group_id: str, upto_message_id: str, after_message_id: str | None
) -> list[dict[str, str]]:
    """One item per sleeptime agent of the group: who runs, and which transcript it reads."""
    with db.connection() as conn:
        group = groups.get(conn, org_id, group_id)
    if group is None or group.manager_agent_id is None:
        return []
    return [
        {
            "organization_id": org_id,
            "group_id": group.id,
            "agent_id": helper,
            "primary_agent_id": group.manager_agent_id,
            "after_message_id": after_message_id or group.last_processed_message_id or "",
            "upto_message_id": upto_message_id,
        }
        for helper in group.agent_ids
    ]


def transcript_message(db: Database, item: dict[str, str]) -> Message | None:
    """The user message a sleeptime agent gets: the reminder and the new transcript lines."""
    org = item["organization_id"]
    with db.connection() as conn:
        history = messages.list_for_agent(
            conn,
            org,
            item["primary_agent_id"],
            after=item.get("after_message_id") or None,
            limit=MAX_TRANSCRIPT_MESSAGES,
            order="asc",
        )
    ids = [m.id for m in history]
    if item["upto_message_id"] in ids:  # later lines belong to the next fan-out
        history = history[: ids.index(item["upto_message_id"]) + 1]
    lines = transcript_lines(history)
    if not lines:
        return None
    return Message(
        organization_id=org,
        agent_id=item["agent_id"],
        role="user",
        content=[TextContent(text=REMINDER + "\n".join(lines))],
        group_id=item["group_id"],
    )


def finish(db: Database, org_id: str, group_id: str, upto_message_id: str) -> None:
    with db.connection() as conn:
        groups.mark_processed(conn, org_id, group_id, upto_message_id)


def provision_sleeptime(db: Database, primary: Agent, *, now: datetime) -> Group:
    helper = provision_helper(db, primary, now=now)
    with db.transaction() as conn:
        return groups.create(
            conn,
            Group(
                organization_id=primary.organization_id,
                manager_type="sleeptime",
                manager_agent_id=primary.id,
                agent_ids=[helper.id],
                sleeptime_agent_frequency=DEFAULT_FREQUENCY,
            ),
        )


def provision_helper(db: Database, primary: Agent, *, now: datetime, suffix: str = "") -> Agent:
    """A sleeptime agent sharing the primary's blocks (the caller puts it in a group)."""
    with db.connection() as conn:
        shared = blocks.for_agent(conn, primary.organization_id, primary.id)
    helper = Agent(
        organization_id=primary.organization_id,
        name=f"{primary.name}-sleeptime{suffix}",
        agent_type="sleeptime_agent",
        llm_config=primary.llm_config,
        embedding_config=primary.embedding_config,
        timezone=primary.timezone,
    )
    persona = Block(
        organization_id=primary.organization_id,
        label="memory_persona",
        value=SLEEPTIME_PERSONA,
        description="Who the memory keeper is.",
    )
    # A primary with a memory_persona of its own (a sleeptime agent made with sleeptime)
    # shares it: Letta gives the helper both, and an agent here has one block per label.
    own = [] if any(b.label == persona.label for b in shared) else [persona]
    return provision_agent(db, helper, memory_blocks=own, existing_blocks=shared, now=now)


def delete_with_helpers(db: Database, org_id: str, agent_id: str) -> bool:
    """Delete an agent; a primary takes its sleeptime group and agents with it."""
    with db.transaction() as conn:
        group = groups.managed_by(conn, org_id, agent_id)
        if group is not None:
            for helper in group.agent_ids:
                agents.delete(conn, org_id, helper)
            groups.delete(conn, org_id, group.id)
        return agents.delete(conn, org_id, agent_id)
