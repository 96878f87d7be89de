"""Agent files (.af) out, in Letta 0.16.1's format (its fixtures in `shared/`).

An export holds the agent (with its sleeptime agents and their group, when it is a
primary), the blocks and tools they have, and their messages: the context window and the
latest `RECENT_MESSAGES` before it, as Letta's exporter takes them. Ids are renumbered per
file (`agent-0`, `block-0`, `message-0`, ...). Archival passages are not in the file (nor
in Letta's); the agents' folders and their files' text are (agent_files/folders.py).
"""

from __future__ import annotations

from typing import Any

from cairn.agent_files import folders as agent_folders
from cairn.domain.agents import Agent
from cairn.domain.base import utc_now
from cairn.domain.blocks import Block
from cairn.domain.groups import Group
from cairn.domain.messages import Message
from cairn.domain.tools import Tool
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services import fork
from cairn.store import agent_secrets, agents, blocks, groups, messages, tools
from cairn.store.db import Connection

# Letta 0.16.1's alembic head: the only version mark its files carry.
REVISION = "39577145c45d"


# Letta's exporter takes the agent's latest messages (and then any of the context window
# not among them).
RECENT_MESSAGES = 50


_AGENT_DEFAULTS: dict[str, Any] = {
    "memory_blocks": [],
    "tools": [],
    "source_ids": [],
    "folder_ids": None,
    "initial_message_sequence": None,
    "include_base_tools": False,
    "include_multi_agent_tools": False,
    "include_base_tool_rules": False,
    "include_default_source": False,
    "model": None,
    "embedding": None,
    "model_settings": None,
    "context_window_limit": None,
    "embedding_chunk_size": None,
    "max_tokens": None,
    "max_reasoning_tokens": None,
    "enable_reasoner": False,
    "reasoning": None,
    "from_template": None,
    "template": False,
    "project": None,
    "tool_exec_environment_variables": {},
    "secrets": None,
    "memory_variables": None,
    "template_id": None,
    "base_template_id": None,
    "identity_ids": None,
    "response_format": None,
    "parallel_tool_calls": None,
    "files_agents": [],
}


_BLOCK_DEFAULTS: dict[str, Any] = {
    "template_name": None,
    "is_template": False,
    "template_id": None,
    "base_template_id": None,
    "deployment_id": None,
    "entity_id": None,
    "preserve_on_migration": False,
    "hidden": None,
}


class _Ids:
    """Per-file ids, `<prefix>-<n>` in the order things are met."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, real: str) -> str:
        if real not in self.seen:
            prefix = real.split("-", 1)[0]
            n = self.counts.get(prefix, 0)
            self.counts[prefix] = n + 1
            self.seen[real] = f"{prefix}-{n}"
        return self.seen[real]


def export(rt: Runtime, org: str, agent_id: str) -> dict[str, Any]:
    with rt.db.connection() as conn:
        return export_in(conn, org, agent_id)


class _Discarded(Exception):
    """Rolls back the fork an export as of a version reads (it carries the file out)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data


def export_at(rt: Runtime, org: str, agent_id: str, version: int) -> dict[str, Any]:
    """The agent as of a version of its history (docs/history.md): a fork of it at that
    version, under its name then, exported and never committed."""
    try:
        with rt.db.transaction() as conn:
            then = fork.fork_in(conn, org, agent_id, version)
            named = then.model_copy(update={"name": then.name.removesuffix(" (fork)")})
            agents.update(conn, named, expected_version=then.version, kind="update")
            raise _Discarded(export_in(conn, org, then.id))
    except _Discarded as done:
        return done.data


def export_in(conn: Connection, org: str, agent_id: str) -> dict[str, Any]:
    """The agent file, read on the caller's connection (an uncommitted fork's, for an agent
    exported as of a version: services/fork.py)."""
    ids = _Ids()
    agent = agent_service.fetch(conn, org, agent_id)
    group = groups.managed_by(conn, org, agent.id)
    members = [agent]
    if group is not None:
        members += [a for a in (agents.get(conn, org, i) for i in group.agent_ids) if a]
    ids(agent.id)
    for member in members[1:]:
        ids(member.id)
    entries: list[dict[str, Any]] = []
    all_blocks: dict[str, Block] = {}
    all_tools: dict[str, Tool] = {}
    for member in members:
        held_blocks = blocks.for_agent(conn, org, member.id)
        held_tools = tools.for_agent(conn, org, member.id)
        all_blocks.update({b.id: b for b in held_blocks})
        all_tools.update({t.id: t for t in held_tools})
        entries.append(_agent_entry(conn, member, held_blocks, held_tools, group, ids))
    documents = agent_folders.export(conn, members, ids)
    for member, entry in zip(members, entries, strict=True):
        entry.update(documents.by_agent[member.id])
    return {
        "agents": entries,
        "groups": [_group_entry(group, ids)] if group is not None else [],
        "blocks": [_block_entry(b, ids) for b in all_blocks.values()],
        "files": documents.files,
        "sources": documents.sources,
        "tools": [_tool_entry(t, ids) for t in all_tools.values()],
        "mcp_servers": [],
        "metadata": {"revision_id": REVISION},
        "created_at": utc_now().isoformat(),
    }


def _agent_entry(
    conn: Connection,
    agent: Agent,
    held_blocks: list[Block],
    held_tools: list[Tool],
    group: Group | None,
    ids: _Ids,
) -> dict[str, Any]:
    recent = messages.list_for_agent(
        conn, agent.organization_id, agent.id, limit=RECENT_MESSAGES, order="desc"
    )
    known = {m.id for m in recent}
    missing = [i for i in agent.message_ids if i not in known]
    shown = sorted(
        [*recent, *messages.get_many(conn, agent.organization_id, missing)],
        key=lambda m: m.sequence_id or 0,
    )
    own = ids(agent.id)
    return {
        **_AGENT_DEFAULTS,
        "name": agent.name,
        "tool_ids": [ids(t.id) for t in held_tools],
        "block_ids": [ids(b.id) for b in held_blocks],
        "tool_rules": [r.model_dump(mode="json") for r in agent.tool_rules],
        "tags": agent.tags,
        "agent_type": agent.agent_type,
        "description": agent.description,
        "metadata": agent.metadata,
        "compaction_settings": agent.compaction_settings.model_dump(mode="json")
        if agent.compaction_settings
        else None,
        "project_id": agent.project_id,
        "message_buffer_autoclear": agent.message_buffer_autoclear,
        # The secrets' names, their values wiped, as Letta exports them (the import's
        # `secrets` form gives them back).
        **_secret_names(agent_secrets.keys_of(conn, agent.organization_id, agent.id)),
        "enable_sleeptime": agent.enable_sleeptime,
        "timezone": agent.timezone,
        "max_files_open": agent.max_files_open,
        "per_file_view_window_char_limit": agent.per_file_view_window_char_limit,
        "hidden": agent.hidden or None,
        "id": own,
        "in_context_message_ids": [ids(i) for i in agent.message_ids],
        "messages": [_message_entry(m, own, ids) for m in shown],
        "group_ids": [ids(group.id)]
        if group is not None and agent.id == group.manager_agent_id
        else [],
        "llm_config": agent.llm_config.model_dump(mode="json"),
        "embedding_config": agent.embedding_config.model_dump(mode="json")
        if agent.embedding_config
        else None,
        "system": agent.system,
    }


def _message_entry(message: Message, agent_file_id: str, ids: _Ids) -> dict[str, Any]:
    data = message.model_dump(
        mode="json",
        exclude={"organization_id", "sequence_id", "step_id", "run_id", "created_by_id", "is_err"},
    )
    return {"type": "message", **data, "id": ids(message.id), "agent_id": agent_file_id}


def _block_entry(block: Block, ids: _Ids) -> dict[str, Any]:
    return {
        **_BLOCK_DEFAULTS,
        "value": block.value,
        "limit": block.limit,
        "project_id": block.project_id,
        "label": block.label,
        "read_only": block.read_only,
        "description": block.description,
        "metadata": block.metadata,
        "id": ids(block.id),
    }


def _tool_entry(tool: Tool, ids: _Ids) -> dict[str, Any]:
    data = tool.model_dump(
        mode="json", exclude={"organization_id", "created_at", "updated_at", "metadata"}
    )
    # Letta's ToolSchema names the tool's metadata by its column, `metadata_`.
    return {**data, "metadata_": tool.metadata, "id": ids(tool.id)}


def _group_entry(group: Group, ids: _Ids) -> dict[str, Any]:
    config: dict[str, Any] = {"manager_type": group.manager_type}
    if group.manager_agent_id is not None:
        config["manager_agent_id"] = ids(group.manager_agent_id)
    if group.manager_type == "sleeptime":
        config["sleeptime_agent_frequency"] = group.sleeptime_agent_frequency
    if group.manager_type in ("round_robin", "dynamic"):
        config["max_turns"] = group.max_turns
    return {
        "agent_ids": [ids(a) for a in group.agent_ids],
        "description": group.description,
        "manager_config": config,
        "project_id": None,
        "shared_block_ids": [ids(b) for b in group.shared_block_ids],
        "hidden": group.hidden,
        "id": ids(group.id),
    }


def _secret_names(keys: list[str]) -> dict[str, Any]:
    if not keys:
        return {}
    wiped = dict.fromkeys(keys, "")
    return {"secrets": wiped, "tool_exec_environment_variables": dict(wiped)}
