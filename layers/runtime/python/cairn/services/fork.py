"""Forking an agent at a past version (docs/history.md): a new agent of the same organization
with the settings, blocks, tools, context window and archival memory the agent had then.

Its own blocks are copies of the blocks' values then; a block the agent shares with other
agents stays shared (attached as it is now) unless `copy_shared_blocks`. The window's
messages are copied (new ids, no run or step of their own); recall memory beyond the window
is not. Archival passages written by then are copied into an archive of the fork's own.
Sleeptime is off on a fork (its group is the source's), and the agent's secrets, identities,
folders and schedules stay with the source.
"""

from __future__ import annotations

from typing import Any

from cairn import faults
from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.ids import new_id
from cairn.domain.passages import Archive
from cairn.errors import InvalidArgumentError, found
from cairn.run.runtime import Runtime
from cairn.services.history import State, state_in
from cairn.store import agents, archives, blocks, history, messages, tools
from cairn.store.db import Connection


def fork(
    rt: Runtime,
    org: str,
    agent_id: str,
    version: int,
    *,
    name: str | None = None,
    copy_shared_blocks: bool = False,
) -> Agent:
    with rt.db.transaction() as conn:
        forked = fork_in(
            conn, org, agent_id, version, name=name, copy_shared_blocks=copy_shared_blocks
        )
        faults.reached("inside_fork")
    return forked


def fork_in(
    conn: Connection,
    org: str,
    agent_id: str,
    version: int,
    *,
    name: str | None = None,
    copy_shared_blocks: bool = False,
) -> Agent:
    """The fork, written in the caller's transaction."""
    source = found(agents.get(conn, org, agent_id), "Agent", agent_id)
    then = state_in(conn, org, agent_id, version)
    settings = {k: v for k, v in (then.config or {}).items() if k in history.CONFIG_KEYS}
    try:
        made = Agent.model_validate(
            {
                **source.model_dump(
                    exclude={"id", "message_ids", "version", "created_at", "updated_at"}
                ),
                **settings,
                "id": new_id("agent"),
                "name": name or f"{settings.get('name', source.name)} (fork)"[:200],
                "message_ids": [],
                "enable_sleeptime": False,
                "last_run_completion": None,
                "last_stop_reason": None,
            }
        )
    except ValueError as err:
        raise InvalidArgumentError(f"name: {err}") from None
    fork = agents.create(conn, made)
    _blocks(conn, org, agent_id, fork.id, then, copy_shared_blocks)
    for tool in then.tools:
        tools.attach(conn, org, fork.id, tool["id"])
    _archive(conn, org, agent_id, fork, then)
    kept = {m.id: m for m in messages.get_many(conn, org, then.message_ids)}
    copies = [
        kept[i].model_copy(
            update={
                "id": new_id("message"),
                "agent_id": fork.id,
                "run_id": None,
                "step_id": None,
                "sequence_id": None,
            }
        )
        for i in then.message_ids
        if i in kept
    ]
    stored = messages.insert(conn, copies)
    detail: dict[str, Any] = {"forked_from": {"agent_id": agent_id, "version": version}}
    return agents.update(
        conn,
        fork.model_copy(update={"message_ids": [m.id for m in stored]}),
        expected_version=fork.version,
        kind="fork",
        detail=detail,
    )


def _blocks(
    conn: Connection, org: str, source: str, fork: str, then: State, copy_shared: bool
) -> None:
    for block in then.blocks:
        shared = set(blocks.agent_ids(conn, org, block["block_id"])) - {source}
        if shared and not copy_shared:
            blocks.attach(conn, org, fork, block["block_id"])
            continue
        copy = blocks.create(
            conn,
            Block(
                organization_id=org,
                label=block["label"],
                value=block["value"],
                limit=block["limit"],
                description=block["description"],
                read_only=block["read_only"],
                metadata=block["metadata"] or {},
            ),
        )
        blocks.attach(conn, org, fork, copy.id)


def _archive(conn: Connection, org: str, source: str, fork: Agent, then: State) -> None:
    """The passages of the source's archive written by then, in an archive of the fork's."""
    theirs = archives.archive_for_agent(conn, org, source)
    if theirs is None:
        return
    mine = archives.create_archive(
        conn,
        Archive(
            organization_id=org,
            name=f"{fork.name} archive"[:200],
            embedding_config=theirs.embedding_config,
        ),
    )
    archives.attach_archive(conn, org, mine.id, fork.id, is_owner=True)
    history.copy_passages(conn, org, theirs.id, mine.id, then.row["created_at"])
