"""A row of one organization is invisible to another, in every repository."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cairn.domain.agents import AgentFilter
from cairn.store import (
    Connection,
    Database,
    agents,
    archives,
    blocks,
    groups,
    messages,
    outbox,
    runs,
    step_journal,
    steps,
    tenancy,
    tools,
)
from tests.integration.world import World, build_world

# Each read: (what it looks up, how) -> a found value for the owner, None/empty for a stranger.
READS: dict[str, Callable[[Connection, str, World], Any]] = {
    "user": lambda c, org, w: tenancy.get_user(c, org, w.user.id),
    "api_key": lambda c, org, w: tenancy.get_api_key(c, org, w.api_key_id),
    "agent": lambda c, org, w: agents.get(c, org, w.agent.id),
    "agents list": lambda c, org, w: agents.list_agents(c, org, AgentFilter(name=w.agent.name)),
    "block": lambda c, org, w: blocks.get(c, org, w.block.id),
    "blocks list": lambda c, org, w: blocks.list_blocks(c, org),
    "block history": lambda c, org, w: blocks.history(c, org, w.block.id),
    "agent blocks": lambda c, org, w: blocks.for_agent(c, org, w.agent.id),
    "agent block by label": lambda c, org, w: blocks.for_agent_by_label(
        c, org, w.agent.id, "persona"
    ),
    "block agents": lambda c, org, w: blocks.agent_ids(c, org, w.block.id),
    "tool": lambda c, org, w: tools.get(c, org, w.tool.id),
    "tool by name": lambda c, org, w: tools.get_by_name(c, org, w.tool.name),
    "tools list": lambda c, org, w: tools.list_tools(c, org),
    "agent tools": lambda c, org, w: tools.for_agent(c, org, w.agent.id),
    "message": lambda c, org, w: messages.get(c, org, w.message.id),
    "messages by id": lambda c, org, w: messages.get_many(c, org, [w.message.id]),
    "agent messages": lambda c, org, w: messages.list_for_agent(c, org, w.agent.id),
    "message count": lambda c, org, w: messages.count_for_agent(c, org, w.agent.id),
    "archive": lambda c, org, w: archives.get_archive(c, org, w.archive.id),
    "agent archive": lambda c, org, w: archives.archive_for_agent(c, org, w.agent.id),
    "passage": lambda c, org, w: archives.get_passage(c, org, w.passage.id),
    "passages list": lambda c, org, w: archives.list_passages(c, org, w.archive.id),
    "passage count": lambda c, org, w: archives.count_passages(c, org, w.archive.id),
    "run": lambda c, org, w: runs.get_run(c, org, w.run.id),
    "runs list": lambda c, org, w: runs.list_runs(c, org, agent_ids=[w.agent.id]),
    "active runs": lambda c, org, w: runs.active_runs(c, org, w.agent.id),
    "step": lambda c, org, w: steps.get_step(c, org, w.step.id),
    "step at index": lambda c, org, w: steps.step_at(c, org, w.run.id, 0),
    "steps list": lambda c, org, w: steps.list_steps(c, org, w.run.id),
    "journal": lambda c, org, w: step_journal.entries(c, org, w.run.id, 0),
    "outbox command": lambda c, org, w: outbox.get(c, org, w.outbox_id),
    "group": lambda c, org, w: groups.get(c, org, w.group.id),
    "managed group": lambda c, org, w: groups.managed_by(c, org, w.agent.id),
}

# Each write by a stranger must change nothing and say so (False).
WRITES: dict[str, Callable[[Connection, str, World], bool]] = {
    "delete agent": lambda c, org, w: agents.delete(c, org, w.agent.id),
    "delete block": lambda c, org, w: blocks.delete(c, org, w.block.id),
    "attach block": lambda c, org, w: blocks.attach(c, org, w.agent.id, w.block.id),
    "detach block": lambda c, org, w: blocks.detach(c, org, w.agent.id, w.block.id),
    "delete tool": lambda c, org, w: tools.delete(c, org, w.tool.id),
    "attach tool": lambda c, org, w: tools.attach(c, org, w.agent.id, w.tool.id),
    "detach tool": lambda c, org, w: tools.detach(c, org, w.agent.id, w.tool.id),
    "delete passage": lambda c, org, w: archives.delete_passage(c, org, w.passage.id),
    "mark outbox sent": lambda c, org, w: outbox.mark_sent(c, org, w.outbox_id),
    "delete group": lambda c, org, w: groups.delete(c, org, w.group.id),
    "revoke api key": lambda c, org, w: tenancy.revoke_api_key(c, org, w.api_key_id),
}


def sees(result: Any, world: World) -> bool:
    """Whether a read's result shows any row of `world`'s organization."""
    if result is None or isinstance(result, bool):
        return bool(result)
    if isinstance(result, int):
        return result > 0
    items = result.values() if isinstance(result, dict) else result
    if not isinstance(items, list | type({}.values())):
        items = [result]
    own_ids = {world.agent.id, world.block.id, world.tool.id}
    return any(
        item in own_ids if isinstance(item, str) else item.organization_id == world.org.id
        for item in items
    )


@pytest.fixture
def two_worlds(db: Database) -> tuple[World, World]:
    with db.transaction() as conn:
        return build_world(conn, "acme"), build_world(conn, "globex")


@pytest.mark.parametrize("read", list(READS), ids=list(READS))
def test_owner_sees_row_and_stranger_does_not(
    db: Database, two_worlds: tuple[World, World], read: str
) -> None:
    mine, theirs = two_worlds
    with db.connection() as conn:
        assert sees(READS[read](conn, mine.org.id, mine), mine)
        assert not sees(READS[read](conn, theirs.org.id, mine), mine)


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_stranger_cannot_touch_row(
    db: Database, two_worlds: tuple[World, World], write: str
) -> None:
    mine, theirs = two_worlds
    with db.transaction() as conn:
        assert WRITES[write](conn, theirs.org.id, mine) is False
    with db.connection() as conn:
        assert agents.get(conn, mine.org.id, mine.agent.id) is not None
        assert [b.id for b in blocks.for_agent(conn, mine.org.id, mine.agent.id)] == [mine.block.id]
        assert [t.id for t in tools.for_agent(conn, mine.org.id, mine.agent.id)] == [mine.tool.id]
        assert archives.get_passage(conn, mine.org.id, mine.passage.id) is not None
        assert groups.get(conn, mine.org.id, mine.group.id) is not None
        assert tenancy.authenticate(conn, mine.api_key) is not None


def test_every_repository_is_covered() -> None:
    """A new repository module must add its reads to the tables above."""
    modules = {agents, archives, blocks, groups, messages, outbox, runs, tenancy, tools}
    source = Path(__file__).read_text()
    for module in modules:
        assert f"{module.__name__.rsplit('.', 1)[1]}." in source
