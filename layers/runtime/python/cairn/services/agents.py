"""Agents: create, read, list, count, modify, delete, reset, context overview."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from cairn.domain import model_settings
from cairn.domain.agent_secrets import KEY_PATTERN, AgentSecret
from cairn.domain.agents import Agent, AgentFilter, check_timezone, file_limits
from cairn.domain.base import utc_now
from cairn.domain.blocks import Block
from cairn.domain.configs import LLMConfig
from cairn.domain.groups import Group
from cairn.domain.identities import Identity
from cairn.domain.messages import Message
from cairn.domain.runs import Run
from cairn.domain.tools import Tool
from cairn.embeddings.providers import default_config
from cairn.errors import InvalidArgumentError, UnprocessableError, found, not_found
from cairn.llm import reasoning
from cairn.llm.catalog import resolve_embedding
from cairn.memory.initial import initial_messages
from cairn.run.agents import provision_agent
from cairn.run.runtime import Runtime
from cairn.run.sleeptime import delete_with_helpers, provision_sleeptime
from cairn.run.steps import prompt
from cairn.run.steps.state import load
from cairn.sealing import Sealer
from cairn.services import identities as identity_service
from cairn.services import providers
from cairn.services.pages import Page
from cairn.services.requests import CreateAgent, UpdateAgent
from cairn.store import (
    agent_secrets,
    agents,
    archives,
    blocks,
    files,
    groups,
    messages,
    runs,
    tools,
)
from cairn.store import identities as identity_rows
from cairn.store.db import Connection

DEFAULT_DESCRIPTIONS = {
    "persona": "Who you are: your personality, voice and how you behave. Keep it current.",
    "human": "What you know about the person you talk with: name, preferences, context.",
}
_ADJECTIVES = ("calm", "bright", "steady", "quiet", "brave", "clever", "gentle", "keen")
_NOUNS = ("cairn", "harbor", "meadow", "summit", "river", "lantern", "compass", "ridge")


@dataclass
class AgentView:
    """An agent with what its AgentState shows: blocks, tools, its sleeptime group."""

    agent: Agent
    blocks: list[Block] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    group: Group | None = None
    relations: bool = True  # False: blocks and tools were not read (the 1.x SDKs' default)
    identities: list[Identity] = field(default_factory=list)
    secrets: list[AgentSecret] = field(default_factory=list)  # opened: its organization's


def fetch(conn: Connection, org: str, agent_id: str, *, for_update: bool = False) -> Agent:
    got = agents.get(conn, org, agent_id, for_update=for_update)
    return found(got, f"Agent with ID {agent_id} not found")


def view_of(conn: Connection, agent: Agent, *, sealer: Sealer, relations: bool = True) -> AgentView:
    return views_of(conn, [agent], sealer=sealer, relations=relations)[0]


def views_of(
    conn: Connection, found: list[Agent], *, sealer: Sealer, relations: bool = True
) -> list[AgentView]:
    """The agents as their AgentStates show them: with `relations`, their blocks, tools,
    identities and secrets, read for the whole page at once (four statements, not four per
    agent)."""
    if not found:
        return []
    org, ids = found[0].organization_id, [a.id for a in found]
    group_of = {a.id: groups.managed_by(conn, org, a.id) for a in found if a.enable_sleeptime}
    if not relations:
        return [AgentView(a, group=group_of.get(a.id), relations=False) for a in found]
    blocks_of, tools_of = blocks.for_agents(conn, org, ids), tools.for_agents(conn, org, ids)
    identities_of = identity_rows.of_agents(conn, org, ids)
    secrets_of = agent_secrets.opened(conn, sealer, org, ids)
    return [
        AgentView(
            a,
            blocks_of[a.id],
            tools_of[a.id],
            group_of.get(a.id),
            identities=identities_of[a.id],
            secrets=secrets_of[a.id],
        )
        for a in found
    ]


def retrieve(rt: Runtime, org: str, agent_id: str, *, relations: bool = True) -> AgentView:
    with rt.db.connection() as conn:
        return view_of(
            conn, fetch(conn, org, agent_id), sealer=rt.engine.sealer, relations=relations
        )


def create(rt: Runtime, org: str, req: CreateAgent) -> AgentView:
    if req.llm_config is not None:
        llm = req.llm_config
        if req.context_window_limit:
            llm = llm.model_copy(update={"context_window": req.context_window_limit})
    elif req.model:
        llm = providers.resolve_handle(
            rt, org, req.model, context_window=req.context_window_limit, max_tokens=req.max_tokens
        )
        # A handle's config takes the request's (deprecated) reasoning fields, as Letta's.
        asked = {
            "enable_reasoner": req.enable_reasoner,
            "max_reasoning_tokens": req.max_reasoning_tokens,
        }
        llm = llm.model_copy(update={k: v for k, v in asked.items() if v is not None})
    else:
        raise InvalidArgumentError("Must specify either model or llm_config in request")
    if req.model_settings is not None:
        llm = _with_settings(llm, req)
    # Letta's reasoning policy for the model and agent type (llm/reasoning.py).
    wanted = req.reasoning if req.reasoning is not None else reasoning.default_reasoning(llm)
    llm = reasoning.apply(llm, wanted, req.agent_type)
    # Pinned at creation: vectors of one agent must keep one size even if the server's
    # default changes later (a key added, the local model installed).
    embedding = req.embedding_config or (
        resolve_embedding(req.embedding, rt.settings)
        if req.embedding
        else default_config(rt.settings)
    )
    with rt.db.connection() as conn:
        providers.check_agent(conn, rt, org, llm, embedding)
    try:
        check_timezone(req.timezone)
        agent = Agent(
            organization_id=org,
            name=req.name or _random_name(),
            description=req.description,
            agent_type=req.agent_type,
            system=req.system or "",
            llm_config=llm,
            embedding_config=embedding,
            compaction_settings=req.compaction_settings,
            tool_rules=req.tool_rules or [],
            tags=req.tags,
            metadata=req.metadata,
            timezone=req.timezone,
            enable_sleeptime=req.enable_sleeptime,
            message_buffer_autoclear=req.message_buffer_autoclear,
            # Letta fills both from the context window when not given.
            max_files_open=req.max_files_open or file_limits(llm.context_window)[0],
            per_file_view_window_char_limit=req.per_file_view_window_char_limit
            or file_limits(llm.context_window)[1],
            hidden=req.hidden,
        )
        new_blocks = [
            Block(
                organization_id=org,
                label=b.label,
                value=b.value,
                limit=b.limit,
                description=b.description or DEFAULT_DESCRIPTIONS.get(b.label),
                metadata=b.metadata,
                read_only=b.read_only,
                hidden=b.hidden,
            )
            for b in req.memory_blocks
        ]
    except ValueError as err:
        raise UnprocessableError(str(err)) from None
    tool_names = list(req.tools)
    with rt.db.connection() as conn:
        for tool_id in req.tool_ids:
            tool = found(tools.get(conn, org, tool_id), "Tool", tool_id)
            tool_names.append(tool.name)
        existing = []
        for block_id in req.block_ids:
            block = found(blocks.get(conn, org, block_id), "Block", block_id)
            existing.append(block)
        for identity_id in req.identity_ids:
            identity_service.fetch(conn, org, identity_id)
    base_rules = req.include_base_tool_rules
    secrets = _checked_secrets(req.given_secrets)
    created = provision_agent(
        rt.db,
        agent,
        secrets=secrets,
        sealer=rt.engine.sealer,
        memory_blocks=new_blocks,
        tool_names=tool_names,
        include_base_tools=req.include_base_tools,
        include_base_tool_rules=base_rules if base_rules is not None else not req.tool_rules,
        existing_blocks=existing,
        now=utc_now(),
    )
    if created.enable_sleeptime:
        provision_sleeptime(rt.db, created, now=utc_now())
    if req.identity_ids:
        with rt.db.transaction() as conn:
            for identity_id in req.identity_ids:
                identity_rows.link(conn, org, identity_id, "agent", [created.id])
    return retrieve(rt, org, created.id)


def list_agents(
    rt: Runtime,
    org: str,
    where: AgentFilter,
    *,
    page: Page,
    relations: bool,
) -> list[AgentView]:
    with rt.db.connection() as conn:
        found = agents.list_agents(
            conn,
            org,
            where,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
        return views_of(conn, found, sealer=rt.engine.sealer, relations=relations)


def count(rt: Runtime, org: str, where: AgentFilter | None = None) -> int:
    with rt.db.connection() as conn:
        return agents.count(conn, org, where)


def modify(rt: Runtime, org: str, agent_id: str, req: UpdateAgent) -> AgentView:
    changes: dict[str, Any] = req.model_dump(
        exclude_unset=True,
        exclude={
            "tool_ids",
            "block_ids",
            "model",
            "context_window_limit",
            "max_tokens",
            "model_settings",
            "llm_config",
            "identity_ids",
            "secrets",
            "tool_exec_environment_variables",
        },
    )
    secrets = _checked_secrets(req.given_secrets)
    if req.tool_rules is not None:
        changes["tool_rules"] = req.tool_rules
    if req.llm_config is not None:
        changes["llm_config"] = req.llm_config
    elif req.model:
        changes["llm_config"] = providers.resolve_handle(
            rt, org, req.model, context_window=req.context_window_limit, max_tokens=req.max_tokens
        )
    with rt.db.transaction() as conn:
        agent = fetch(conn, org, agent_id)
        if "llm_config" not in changes:
            limits = {"context_window": req.context_window_limit, "max_tokens": req.max_tokens}
            if limits := {k: v for k, v in limits.items() if v}:
                changes["llm_config"] = agent.llm_config.model_copy(update=limits)
        if req.model_settings is not None:
            changes["llm_config"] = _with_settings(changes.get("llm_config", agent.llm_config), req)
        if req.reasoning is not None:  # Letta applies its policy again only when asked
            llm = changes.get("llm_config", agent.llm_config)
            changes["llm_config"] = reasoning.apply(llm, req.reasoning, agent.agent_type)
        try:
            updated = Agent.model_validate(agent.model_dump() | changes)
        except ValueError as err:
            raise UnprocessableError(str(err)) from None
        if "llm_config" in changes or "embedding_config" in changes:
            providers.check_agent(conn, rt, org, updated.llm_config, updated.embedding_config)
        agent = agents.update(conn, updated, expected_version=agent.version)
        if secrets is not None:
            agent_secrets.put(conn, rt.engine.sealer, org, agent.id, secrets)
        if req.tool_ids is not None:
            _replace(conn, org, agent.id, req.tool_ids, tools, "Tool")
        if req.block_ids is not None:
            _replace(conn, org, agent.id, req.block_ids, blocks, "Block")
        if req.identity_ids is not None:
            identity_service.identities_for_agent(conn, org, agent.id, req.identity_ids)
        return view_of(conn, agent, sealer=rt.engine.sealer)


def _with_settings(llm: LLMConfig, req: CreateAgent | UpdateAgent) -> LLMConfig:
    assert req.model_settings is not None
    try:
        return model_settings.applied(llm, req.model_settings.given())
    except ValueError as err:
        raise InvalidArgumentError(str(err)) from None


def _replace(
    conn: Connection, org: str, agent_id: str, ids: list[str], repo: Any, what: str
) -> None:
    """Make the agent's tools (or blocks) exactly `ids`."""
    for item in repo.for_agent(conn, org, agent_id):
        if item.id not in ids:
            repo.detach(conn, org, agent_id, item.id)
    for item_id in ids:
        if not repo.attach(conn, org, agent_id, item_id):
            raise not_found(what, item_id)


def delete(rt: Runtime, org: str, agent_id: str) -> None:
    with rt.db.connection() as conn:
        fetch(conn, org, agent_id)
    # A primary's sleeptime group and agents go with it, as in Letta.
    delete_with_helpers(rt.db, org, agent_id)


def reset_messages(rt: Runtime, org: str, agent_id: str, *, add_defaults: bool) -> AgentView:
    """A fresh context window: the system message (rebuilt now) and, if asked, the greeting.
    The old messages stay in recall memory."""
    now = utc_now()
    with rt.db.transaction() as conn:
        agent = fetch(conn, org, agent_id)
        current = blocks.for_agent(conn, org, agent.id)
        archive = archives.archive_for_agent(conn, org, agent.id)
        system = prompt.system_text(
            agent,
            current,
            now=now,
            recall_count=messages.count_for_agent(conn, org, agent.id),
            archival_count=archives.count_passages(conn, org, archive.id) if archive else 0,
            archival_tags=archives.archive_tags(conn, org, archive.id) if archive else [],
            folders=files.agent_folders(conn, agent.id),
        )
        fresh = initial_messages(agent, system, now=now)
        stored = messages.insert(conn, fresh if add_defaults else fresh[:1])
        agent = agents.update(
            conn,
            agent.model_copy(update={"message_ids": [m.id for m in stored]}),
            expected_version=agent.version,
        )
        return view_of(conn, agent, sealer=rt.engine.sealer)


@dataclass
class ContextOverview:
    agent: Agent
    core_memory: str
    functions: list[dict[str, Any]]
    context: list[Message]
    message_tokens: int
    archival_count: int
    recall_count: int


def context_overview(rt: Runtime, org: str, agent_id: str) -> ContextOverview:
    with rt.db.connection() as conn:
        agent = fetch(conn, org, agent_id)
        active = runs.active_runs(conn, org, agent.id)
        # The overview reads what a step would: any run will do as the frame.
        state = load(conn, active[0] if active else Run(organization_id=org, agent_id=agent.id), 0)
    state = found(state, f"Agent with ID {agent_id} not found")
    return ContextOverview(
        agent=agent,
        core_memory=prompt.memory_section(agent, state.blocks, folders=state.folders),
        functions=[{"type": "function", "function": t.json_schema} for t in state.tools],
        context=state.context,
        message_tokens=prompt.context_estimate(state, []),
        archival_count=state.archival_count,
        recall_count=state.recall_count,
    )


def _random_name() -> str:
    return f"{random.choice(_ADJECTIVES)}-{random.choice(_NOUNS)}"


def tags(
    rt: Runtime,
    org: str,
    *,
    query_text: str | None,
    page: Page,
) -> list[str]:
    with rt.db.connection() as conn:
        return agents.tags(
            conn,
            org,
            query_text=query_text,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def _checked_secrets(given: dict[str, str] | None) -> dict[str, str] | None:
    """The secrets asked for, each name one an environment variable can have (4xx else)."""
    if given is None:
        return None
    for key in given:
        if not re.fullmatch(KEY_PATTERN, key) or len(key) > 200:
            raise UnprocessableError(
                f"secrets: `{key}` is not an environment variable's name (letters, digits and "
                "underscores, not starting with a digit)"
            )
    return given
