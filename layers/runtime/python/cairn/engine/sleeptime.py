"""Sleeptime agents (reference §10): a background agent that keeps a primary's memory.

Creating a primary with `enable_sleeptime` builds, as Letta does, a `<name>-sleeptime`
agent of type `sleeptime_agent` that shares the primary's blocks (plus a persona block of
its own) and a `sleeptime` group managed by the primary. Running it every
`sleeptime_agent_frequency` turns is the sleeptime workflow's job.
"""

from __future__ import annotations

from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.groups import Group
from cairn.engine.agents import provision_agent
from cairn.store import agents, blocks, groups
from cairn.store.db import Database

DEFAULT_FREQUENCY = 5
SLEEPTIME_PERSONA = (
    "I am the background memory keeper of the agent I serve. I read its conversations and "
    "keep our shared memory blocks accurate, concise and free of duplicates."
)


def provision_sleeptime(db: Database, primary: Agent, *, now: datetime) -> Group:
    with db.connection() as conn:
        shared = blocks.for_agent(conn, primary.organization_id, primary.id)
    helper = Agent(
        organization_id=primary.organization_id,
        name=f"{primary.name}-sleeptime",
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
    helper = provision_agent(db, helper, memory_blocks=[persona], existing_blocks=shared, now=now)
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


def delete_with_helpers(db: Database, org_id: str, agent_id: str) -> bool:
    """Delete an agent; a primary takes its sleeptime group and agents with it."""
    with db.transaction() as conn:
        group = groups.managed_by(conn, org_id, agent_id)
        if group is not None:
            for helper in group.agent_ids:
                agents.delete(conn, org_id, helper)
            groups.delete(conn, org_id, group.id)
        return agents.delete(conn, org_id, agent_id)
