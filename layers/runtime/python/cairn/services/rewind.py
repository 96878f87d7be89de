"""Rewinding an agent to a past version (docs/history.md): its blocks, context window, tools,
settings and system prompt as they were, in one transaction that is itself a new version (so
a rewind is undone by rewinding to the version before it).

Nothing is deleted from recall memory: messages newer than the window returned to are marked
`rewound_at` (kept, listed, out of the agent's own recall search). Archival passages written
since the version stay unless the request says `archival: "delete"`; either way the answer
lists them. Blocks return to their versions of then, each edit a new version of the block
(a block shared with other agents changes for them too). Refused (409) while a run of the
agent is in progress: the run would check in on a state it never read.
"""

from __future__ import annotations

from typing import Any, Literal

from cairn import faults
from cairn.domain.agents import Agent
from cairn.domain.messages import Message
from cairn.errors import ConflictError, found, not_found
from cairn.run.runtime import Runtime
from cairn.services.history import State, state_in
from cairn.store import agents, archives, blocks, history, messages, runs, tools
from cairn.store.db import Connection

Archival = Literal["keep", "delete"]


def rewind(
    rt: Runtime, org: str, agent_id: str, version: int, *, archival: Archival = "keep"
) -> dict[str, Any]:
    with rt.db.transaction() as conn:
        # Locked first: a run starting meanwhile waits for this to commit and reads its result.
        agent = found(agents.get(conn, org, agent_id, for_update=True), "Agent", agent_id)
        if runs.active_runs(conn, org, agent_id):
            raise ConflictError(
                f"Agent {agent_id} has a run in progress: rewind it once the run has ended"
            )
        if version > agent.version:  # as the state, diff, export and fork of it answer
            raise not_found(
                f"Agent {agent_id} has no version {version} in its history "
                f"(it is at version {agent.version})"
            )
        target = state_in(conn, org, agent_id, version)
        restored = _restore_blocks(conn, org, agent_id, target)
        _restore_tools(conn, org, agent_id, target)
        _restore_system(conn, org, target)
        rewound = history.mark_rewound(conn, org, agent_id, target.message_ids)
        after = history.passages_after(conn, org, agent_id, target.row["created_at"])
        gone = after if archival == "delete" else []
        deleted = [p for p in gone if archives.delete_passage(conn, org, p)]
        settings = {k: v for k, v in (target.config or {}).items() if k in history.CONFIG_KEYS}
        try:
            returned = Agent.model_validate(
                {**agent.model_dump(), **settings, "message_ids": target.message_ids}
            )
        except ValueError as err:  # settings Cairn no longer takes: kept as they are now
            raise ConflictError(f"Version {version}'s settings cannot be restored: {err}") from None
        detail = {"rewound_to": version, "passages_deleted": deleted}
        now = agents.update(
            conn, returned, expected_version=agent.version, kind="rewind", detail=detail
        )
        faults.reached("inside_rewind")
    return {
        "version": now.version,
        "rewound_to": version,
        "blocks_restored": restored,
        "message_ids": target.message_ids,
        "messages_rewound": rewound,
        "passages_after": after,
        "passages_deleted": deleted,
    }


def _restore_blocks(conn: Connection, org: str, agent_id: str, target: State) -> list[str]:
    """The blocks attached then, at their versions then (each restored one a new version);
    those attached since, detached (kept). Blocks deleted since cannot come back."""
    wanted = {b["block_id"]: b for b in target.blocks}
    restored = []
    for block in blocks.for_agent(conn, org, agent_id):
        if block.id not in wanted:
            blocks.detach(conn, org, agent_id, block.id)
    for block_id, then in wanted.items():
        now = blocks.get(conn, org, block_id)
        if now is None:
            continue
        if now.version != then["version"]:
            values = {k: then[k] for k in ("label", "value", "limit", "description", "read_only")}
            blocks.update(
                conn,
                now.model_copy(update={**values, "metadata": then["metadata"] or {}}),
                expected_version=now.version,
            )
            restored.append(block_id)
        blocks.attach(conn, org, agent_id, block_id)
    return restored


def _restore_tools(conn: Connection, org: str, agent_id: str, target: State) -> None:
    wanted = {t["id"] for t in target.tools}
    for tool in tools.for_agent(conn, org, agent_id):
        if tool.id not in wanted:
            tools.detach(conn, org, agent_id, tool.id)
    for tool_id in wanted:
        tools.attach(conn, org, agent_id, tool_id)


def _restore_system(conn: Connection, org: str, target: State) -> None:
    """The system message's text as it was (the window's first message, when a system one)."""
    if target.system is None or not target.message_ids:
        return
    first = messages.get(conn, org, target.message_ids[0])
    if first is None or first.role != "system" or first.text == target.system:
        return
    then = Message.model_validate(
        {**first.model_dump(), "content": [{"type": "text", "text": target.system}]}
    )
    messages.rewrite_content(conn, then)
