"""Agent files (.af) in, Letta 0.16.1's format.

An import does what Letta's `import_file` does, in one transaction: tools upserted by
name (a custom tool's source replaced when `override_existing_tools`; built-ins never),
blocks created anew, agents created with the file's settings and no messages, then their
messages with new ids and the context window in the file's order, then the groups.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cairn.agent_files import folders as agent_folders
from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.configs import EmbeddingConfig, LLMConfig
from cairn.domain.groups import Group
from cairn.domain.messages import Message, TextContent
from cairn.domain.runs import file_job_command
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError, UnprocessableError
from cairn.llm import endpoints
from cairn.llm.catalog import resolve_embedding
from cairn.run.runtime import Runtime
from cairn.services import providers
from cairn.store import agent_secrets, agents, blocks, groups, messages, tools
from cairn.store.db import Connection
from cairn.tools.registry import BUILTIN_TOOLS

logger = logging.getLogger(__name__)


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", protected_namespaces=(), defer_build=True)


class _FileAgent(_Lenient):
    id: str
    name: str
    agent_type: str = "letta_v1_agent"
    system: str | None = None
    description: str | None = None
    llm_config: LLMConfig
    embedding_config: EmbeddingConfig | None = None
    tool_ids: list[str] = Field(default_factory=list)
    source_ids: list[str] = Field(default_factory=list)
    files_agents: list[dict[str, Any]] = Field(default_factory=list)
    block_ids: list[str] = Field(default_factory=list)
    tool_rules: list[dict[str, Any]] | None = None
    tags: list[str] | None = None
    metadata: dict[str, Any] | None = None
    timezone: str | None = None
    enable_sleeptime: bool | None = None
    message_buffer_autoclear: bool = False
    max_files_open: int | None = None
    per_file_view_window_char_limit: int | None = None
    compaction_settings: dict[str, Any] | None = None
    in_context_message_ids: list[str] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    secrets: dict[str, str] | None = None
    tool_exec_environment_variables: dict[str, str] | None = None


class _FileGroup(_Lenient):
    id: str
    agent_ids: list[str] = Field(default_factory=list)
    description: str = ""
    manager_config: dict[str, Any] = Field(default_factory=dict)
    shared_block_ids: list[str] = Field(default_factory=list)


class AgentFile(_Lenient):
    agents: list[_FileAgent] = Field(min_length=1)
    groups: list[_FileGroup] = Field(default_factory=list)
    blocks: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    sources: list[dict[str, Any]] = Field(default_factory=list)
    files: list[dict[str, Any]] = Field(default_factory=list)


@dataclass
class ImportOptions:
    """Letta's import form, its deprecated names folded in as Letta folds them."""

    override_existing_tools: bool = True
    append_copy_suffix: bool = True
    name: str | None = None
    embedding: str | None = None
    # Letta 0.16.1 takes `strip_messages` and never passes it on: messages are imported.
    strip_messages: bool = False
    # The values of the secrets the file names (its own are wiped on export).
    secrets: dict[str, str] | None = None


def parse(raw: bytes) -> AgentFile:
    """The file's JSON as Letta reads it (a double-encoded string is decoded again)."""
    try:
        data = json.loads(raw)
        if isinstance(data, str):
            data = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgumentError("Corrupted agent file format.") from None
    if not isinstance(data, dict) or not isinstance(data.get("agents"), list):
        raise InvalidArgumentError(
            "Legacy AgentSchema format is deprecated. Please use the new AgentFileSchema "
            "format with 'agents' field."
        )
    try:
        return AgentFile.model_validate(data)
    except ValidationError as err:
        raise _invalid("", err) from None


def _invalid(where: str, err: ValidationError) -> UnprocessableError:
    """A 422 naming the file's entry and the field in it that is wrong."""
    first = err.errors()[0]
    path = ".".join(str(p) for p in (*([where] if where else []), *first["loc"]))
    return UnprocessableError(f"agent file: {path}: {first['msg']}")


def import_file(rt: Runtime, org: str, file: AgentFile, options: ImportOptions) -> list[str]:
    """Create what the file holds; the new agents' ids, in the file's order."""
    embedding = resolve_embedding(options.embedding, rt.settings) if options.embedding else None
    _check_references(file)
    for n, entry in enumerate(file.agents):  # nothing is written for an endpoint refused
        rehomed: dict[str, Any] = {
            "llm_config": endpoints.rehome_llm(entry.llm_config, rt.settings)
        }
        if entry.embedding_config is not None:
            rehomed["embedding_config"] = endpoints.rehome_embedding(
                entry.embedding_config, rt.settings
            )
        file.agents[n] = entry = entry.model_copy(update=rehomed)
        try:
            with rt.db.connection() as conn:
                providers.check_agent(
                    conn, rt, org, entry.llm_config, embedding or entry.embedding_config
                )
        except InvalidArgumentError as err:
            raise InvalidArgumentError(f"agent file: agents.{entry.id}.{err}") from None
    mapped: dict[str, str] = {}
    documents = agent_folders.Imported()
    try:
        with rt.db.transaction() as conn:
            documents = _import_all(rt, conn, org, file, options, embedding, mapped)
    except BaseException:
        if documents.objects and rt.documents is not None:
            rt.documents.delete(documents.objects)  # the originals of files never made
        raise
    for file_id in documents.file_ids:  # their text is in: the jobs embed it
        try:
            rt.queue.publish(file_job_command(org, file_id, lanes=rt.settings.org_files_at_once))
        except Exception:  # the sweeper publishes it again
            logger.exception("publishing the job of imported file %s failed", file_id)
    return [mapped[a.id] for a in file.agents]


def _import_all(
    rt: Runtime,
    conn: Connection,
    org: str,
    file: AgentFile,
    options: ImportOptions,
    embedding: EmbeddingConfig | None,
    mapped: dict[str, str],
) -> agent_folders.Imported:
    for tool_entry in file.tools:
        mapped[str(tool_entry["id"])] = _import_tool(conn, org, tool_entry, options).id
    for block_entry in file.blocks:
        mapped[str(block_entry["id"])] = blocks.create(conn, _block(org, block_entry)).id
    # Letta's exporter writes enable_sleeptime false even for a primary whose sleeptime
    # group is in the file: the group says it, so the primary keeps its helper going.
    primaries = {
        g.manager_config.get("manager_agent_id")
        for g in file.groups
        if g.manager_config.get("manager_type") == "sleeptime"
    }
    created: list[Agent] = []
    for entry in file.agents:
        if entry.id in primaries:
            entry = entry.model_copy(update={"enable_sleeptime": True})
        agent = _agent(org, entry, options, embedding)
        stored = agents.create(conn, agent)
        if values := _secrets(entry, options):
            agent_secrets.put(conn, rt.engine.sealer, org, stored.id, values)
        for file_id in entry.block_ids:
            blocks.attach(conn, org, stored.id, mapped[file_id])
        for file_id in entry.tool_ids:
            tools.attach(conn, org, stored.id, mapped[file_id])
        mapped[entry.id] = stored.id
        created.append(stored)
    for entry, agent in zip(file.agents, created, strict=True):
        _import_messages(conn, agent, entry)
    for group_entry in file.groups:
        # A shared block is one of the file's (remapped) or already the organization's;
        # an id of anyone else's is refused, and the transaction takes everything back.
        foreign = [
            b
            for b in group_entry.shared_block_ids
            if b not in mapped and blocks.get(conn, org, b) is None
        ]
        if foreign:
            raise UnprocessableError(
                f"agent file: groups.{group_entry.id}.shared_block_ids: neither in the "
                f"file nor blocks of this organization: {', '.join(foreign)}"
            )
        groups.create(conn, _group(org, group_entry, mapped))
    made = agent_folders.import_folders(
        rt, conn, org, {"sources": file.sources, "files": file.files}, mapped, embedding
    )
    for entry in file.agents:
        agent_folders.attach_to_agent(conn, org, mapped[entry.id], entry.model_dump(), mapped)
    return made


def _secrets(entry: _FileAgent, options: ImportOptions) -> dict[str, str]:
    """The file's secret names with the values the import gives for them (Letta: a name the
    form has no value for gets an empty one; without the form, the file's values stay)."""
    named = entry.secrets or entry.tool_exec_environment_variables or {}
    if options.secrets:
        return {key: options.secrets.get(key, "") for key in named}
    return dict(named)


def _check_references(file: AgentFile) -> None:
    """Every id an agent or group names is in the file (before anything is written)."""
    tool_ids = {str(t.get("id")) for t in file.tools}
    block_ids = {str(b.get("id")) for b in file.blocks}
    agent_ids = {a.id for a in file.agents}
    for agent in file.agents:
        message_ids = {str(m.get("id")) for m in agent.messages}
        for what, wanted, known in (
            ("tool_ids", agent.tool_ids, tool_ids),
            ("block_ids", agent.block_ids, block_ids),
            ("in_context_message_ids", agent.in_context_message_ids, message_ids),
        ):
            unknown = [i for i in wanted if i not in known]
            if unknown:
                raise UnprocessableError(
                    f"agent file: agents.{agent.id}.{what}: not in the file: {', '.join(unknown)}"
                )
    for group in file.groups:
        manager = group.manager_config.get("manager_agent_id")
        unknown = [
            a for a in [*group.agent_ids, *([manager] if manager else [])] if a not in agent_ids
        ]
        if unknown:
            raise UnprocessableError(
                f"agent file: groups.{group.id}: agents not in the file: {', '.join(unknown)}"
            )


def _import_tool(conn: Connection, org: str, entry: dict[str, Any], options: ImportOptions) -> Tool:
    name = str(entry.get("name") or "")
    existing = tools.get_by_name(conn, org, name)
    if entry.get("tool_type", "custom") != "custom" or name in BUILTIN_TOOLS:
        if existing is not None:
            return existing  # a built-in is never replaced from a file
        if name in BUILTIN_TOOLS:
            return tools.upsert(conn, BUILTIN_TOOLS[name].as_tool(org))
    if existing is not None and not options.override_existing_tools:
        return existing
    # Letta writes null for settings left at their default: Cairn's defaults then apply.
    entry = {"metadata": entry.get("metadata_"), **entry}
    fields = {
        k: v
        for k, v in entry.items()
        if k in Tool.model_fields
        and k not in ("id", "created_by_id", "last_updated_by_id", "project_id")
        and v is not None
    }
    try:
        tool = Tool.model_validate(
            {
                **fields,
                "organization_id": org,
                **({"id": existing.id} if existing else {}),
            }
        )
    except ValidationError as err:
        raise _invalid(f"tools.{entry.get('id')}", err) from None
    return tools.upsert(conn, tool)


def _block(org: str, entry: dict[str, Any]) -> Block:
    fields = {
        k: v for k, v in entry.items() if k in Block.model_fields and k != "id" and v is not None
    }
    fields["metadata"] = fields.get("metadata") or {}
    fields["hidden"] = bool(fields.get("hidden"))
    try:
        return Block.model_validate({**fields, "organization_id": org})
    except ValidationError as err:
        raise _invalid(f"blocks.{entry.get('id')}", err) from None


def _agent(
    org: str, entry: _FileAgent, options: ImportOptions, embedding: EmbeddingConfig | None
) -> Agent:
    name = options.name or (f"{entry.name}_copy" if options.append_copy_suffix else entry.name)
    try:
        return Agent.model_validate(
            {
                "organization_id": org,
                "name": name,
                "agent_type": entry.agent_type,
                "system": entry.system or "",
                "description": entry.description,
                "llm_config": entry.llm_config,
                "embedding_config": embedding or entry.embedding_config,
                "compaction_settings": entry.compaction_settings,
                "tool_rules": entry.tool_rules or [],
                "tags": entry.tags or [],
                "metadata": entry.metadata or {},
                "timezone": entry.timezone or "UTC",
                "enable_sleeptime": bool(entry.enable_sleeptime),
                "message_buffer_autoclear": entry.message_buffer_autoclear,
                "max_files_open": entry.max_files_open,
                "per_file_view_window_char_limit": entry.per_file_view_window_char_limit,
            }
        )
    except ValidationError as err:
        raise _invalid(f"agents.{entry.id}", err) from None


def _import_messages(conn: Connection, agent: Agent, entry: _FileAgent) -> None:
    made: dict[str, str] = {}
    rows: list[Message] = []
    for item in entry.messages:
        fields = {k: v for k, v in item.items() if k in Message.model_fields}
        for dropped in ("id", "organization_id", "agent_id", "sequence_id", "run_id", "step_id"):
            fields.pop(dropped, None)
        try:
            message = Message.model_validate(
                {**fields, "organization_id": agent.organization_id, "agent_id": agent.id}
            )
        except ValidationError as err:
            raise UnprocessableError(
                f"agent file: agents.{entry.id}.messages.{item.get('id')}: {err.errors()[0]['msg']}"
            ) from None
        made[str(item.get("id"))] = message.id
        rows.append(message)
    window = [made[i] for i in entry.in_context_message_ids if i in made]
    first = next((m for m in rows if m.id == window[0]), None) if window else None
    if first is None or first.role != "system":
        # A file with no messages (Letta's strip_messages, or written by hand) or a window
        # not opened by the system message: the window must start with one, as every
        # agent's does; its memory section is filled in by the first step.
        system = Message(
            organization_id=agent.organization_id,
            agent_id=agent.id,
            role="system",
            content=[TextContent(text=agent.system)],
        )
        rows.insert(0, system)
        window.insert(0, system.id)
    messages.insert(conn, rows)
    if window:
        agents.update(
            conn, agent.model_copy(update={"message_ids": window}), expected_version=agent.version
        )


def _group(org: str, entry: _FileGroup, mapped: dict[str, str]) -> Group:
    config = entry.manager_config
    manager = config.get("manager_agent_id")
    return Group(
        organization_id=org,
        manager_type=config.get("manager_type", "round_robin"),
        manager_agent_id=mapped[manager] if manager else None,
        agent_ids=[mapped[a] for a in entry.agent_ids],
        description=entry.description,
        sleeptime_agent_frequency=config.get("sleeptime_agent_frequency"),
        max_turns=config.get("max_turns"),
        termination_token=config.get("termination_token"),
        shared_block_ids=[mapped.get(b, b) for b in entry.shared_block_ids],
    )
