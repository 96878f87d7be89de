"""Agents: create, list, count, retrieve, modify, delete, context overview (contract §2, §9)."""

from __future__ import annotations

import random
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from cairn.api import http, letta
from cairn.api.models import resolve_embedding, resolve_model
from cairn.api.requests import CreateAgent, UpdateAgent
from cairn.domain.agents import Agent, check_timezone
from cairn.domain.base import utc_now
from cairn.domain.blocks import Block
from cairn.domain.runs import Run
from cairn.embeddings.providers import default_config
from cairn.engine.agents import provision_agent
from cairn.engine.prompt import CHARS_PER_TOKEN, context_estimate
from cairn.engine.sleeptime import delete_with_helpers, provision_sleeptime
from cairn.engine.state import load
from cairn.errors import InvalidArgumentError, NotFoundError, UnprocessableError
from cairn.memory.render import render_memory_section
from cairn.store import agents, archives, blocks, groups, runs, tools
from cairn.store.db import Connection
from cairn.tools.rules import ToolRulesSolver

router = APIGatewayHttpRouter()

DEFAULT_DESCRIPTIONS = {
    "persona": "Who you are: your personality, voice and how you behave. Keep it current.",
    "human": "What you know about the person you talk with: name, preferences, context.",
}
INCLUDES = (
    "agent.blocks",
    "agent.tools",
    "agent.tags",
    "agent.sources",
    "agent.identities",
    "agent.managed_group",
    "agent.secrets",
)
_ADJECTIVES = ("calm", "bright", "steady", "quiet", "brave", "clever", "gentle", "keen")
_NOUNS = ("cairn", "harbor", "meadow", "summit", "river", "lantern", "compass", "ridge")


def get_agent(conn: Connection, org: str, agent_id: str) -> Agent:
    http.check_id("agent", agent_id, what="agent_id")
    agent = agents.get(conn, org, agent_id)
    if agent is None:
        raise NotFoundError(f"Agent with ID {agent_id} not found")
    return agent


def agent_state(conn: Connection, agent: Agent, *, relations: bool = True) -> dict[str, Any]:
    org = agent.organization_id
    group = groups.managed_by(conn, org, agent.id) if agent.enable_sleeptime else None
    extra = {"multi_agent_group": letta.group_json(group)} if group is not None else {}
    if not relations:
        return letta.agent_json(agent) | {"tags": []} | extra
    data = letta.agent_json(
        agent,
        blocks=blocks.for_agent(conn, org, agent.id),
        tools=tools.for_agent(conn, org, agent.id),
    )
    return data | extra


def _relations_wanted() -> bool:
    include = http.query_list("include")
    return bool(include) or not http.sdk_1x()


@router.post("/agents/")
def create_agent() -> Response[Any]:
    req: CreateAgent = http.body(CreateAgent)
    rt = http.rt()
    org = http.org_id()
    if req.llm_config is not None:
        llm = req.llm_config
        if req.context_window_limit:
            llm = llm.model_copy(update={"context_window": req.context_window_limit})
    elif req.model:
        llm = resolve_model(
            req.model,
            rt.settings,
            context_window=req.context_window_limit,
            max_tokens=req.max_tokens,
        )
    else:
        raise InvalidArgumentError("Must specify either model or llm_config in request")
    # Pinned at creation: vectors of one agent must keep one size even if the server's
    # default changes later (a key added, the local model installed).
    embedding = req.embedding_config or (
        resolve_embedding(req.embedding, rt.settings)
        if req.embedding
        else default_config(rt.settings)
    )
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
            max_files_open=req.max_files_open,
            per_file_view_window_char_limit=req.per_file_view_window_char_limit,
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
            tool = tools.get(conn, org, http.check_id("tool", tool_id, what="tool_ids"))
            if tool is None:
                raise NotFoundError(f"Tool with id '{tool_id}' not found")
            tool_names.append(tool.name)
        existing = []
        for block_id in req.block_ids:
            block = blocks.get(conn, org, http.check_id("block", block_id, what="block_ids"))
            if block is None:
                raise NotFoundError(f"Block with id '{block_id}' not found")
            existing.append(block)
    base_rules = req.include_base_tool_rules
    created = provision_agent(
        rt.db,
        agent,
        memory_blocks=new_blocks,
        tool_names=tool_names,
        include_base_tools=req.include_base_tools,
        include_base_tool_rules=base_rules if base_rules is not None else not req.tool_rules,
        existing_blocks=existing,
        now=utc_now(),
    )
    if created.enable_sleeptime:
        provision_sleeptime(rt.db, created, now=utc_now())
    with rt.db.connection() as conn:
        return http.json_reply(200, agent_state(conn, created))


@router.get("/agents/")
def list_agents() -> Response[Any]:
    order = http.query("order", "desc")
    if order not in ("asc", "desc"):
        raise UnprocessableError("order: must be asc or desc")
    with http.rt().db.connection() as conn:
        found = agents.list_agents(
            conn,
            http.org_id(),
            name=http.query("name"),
            query_text=http.query("query_text"),
            tags=http.query_list("tags") or None,
            match_all_tags=http.query_bool("match_all_tags", False),
            after=http.query("after"),
            before=http.query("before"),
            limit=http.query_int("limit", 50),
            order=order,  # type: ignore[arg-type]
        )
        relations = _relations_wanted()
        return http.json_reply(200, [agent_state(conn, a, relations=relations) for a in found])


@router.get("/agents/count")
def count_agents() -> Response[Any]:
    with http.rt().db.connection() as conn:
        found = agents.list_agents(conn, http.org_id(), limit=100_000)
    return http.json_reply(200, len(found))


@router.get("/agents/<agent_id>")
def retrieve_agent(agent_id: str) -> Response[Any]:
    with http.rt().db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
        return http.json_reply(200, agent_state(conn, agent, relations=_relations_wanted()))


@router.patch("/agents/<agent_id>")
def modify_agent(agent_id: str) -> Response[Any]:
    req: UpdateAgent = http.body(UpdateAgent)
    rt = http.rt()
    org = http.org_id()
    changes: dict[str, Any] = req.model_dump(
        exclude_unset=True,
        exclude={"tool_ids", "block_ids", "model", "context_window_limit", "llm_config"},
    )
    if req.tool_rules is not None:
        changes["tool_rules"] = req.tool_rules
    if req.llm_config is not None:
        changes["llm_config"] = req.llm_config
    elif req.model:
        changes["llm_config"] = resolve_model(
            req.model, rt.settings, context_window=req.context_window_limit
        )
    with rt.db.transaction() as conn:
        agent = get_agent(conn, org, agent_id)
        if req.context_window_limit and "llm_config" not in changes:
            changes["llm_config"] = agent.llm_config.model_copy(
                update={"context_window": req.context_window_limit}
            )
        try:
            updated = Agent.model_validate(agent.model_dump() | changes)
        except ValueError as err:
            raise UnprocessableError(str(err)) from None
        agent = agents.update(conn, updated, expected_version=agent.version)
        if req.tool_ids is not None:
            _replace_tools(conn, org, agent.id, req.tool_ids)
        if req.block_ids is not None:
            _replace_blocks(conn, org, agent.id, req.block_ids)
        return http.json_reply(200, agent_state(conn, agent))


def _replace_tools(conn: Connection, org: str, agent_id: str, tool_ids: list[str]) -> None:
    for tool in tools.for_agent(conn, org, agent_id):
        if tool.id not in tool_ids:
            tools.detach(conn, org, agent_id, tool.id)
    for tool_id in tool_ids:
        if not tools.attach(conn, org, agent_id, http.check_id("tool", tool_id, what="tool_ids")):
            raise NotFoundError(f"Tool with id '{tool_id}' not found")


def _replace_blocks(conn: Connection, org: str, agent_id: str, block_ids: list[str]) -> None:
    for block in blocks.for_agent(conn, org, agent_id):
        if block.id not in block_ids:
            blocks.detach(conn, org, agent_id, block.id)
    for block_id in block_ids:
        if not blocks.attach(
            conn, org, agent_id, http.check_id("block", block_id, what="block_ids")
        ):
            raise NotFoundError(f"Block with id '{block_id}' not found")


@router.delete("/agents/<agent_id>")
def delete_agent(agent_id: str) -> Response[Any]:
    rt = http.rt()
    with rt.db.connection() as conn:
        agent = get_agent(conn, http.org_id(), agent_id)
    # A primary's sleeptime group and agents go with it, as in Letta.
    delete_with_helpers(rt.db, agent.organization_id, agent.id)
    return http.json_reply(200, {"message": f"Agent id={agent_id} successfully deleted"})


@router.get("/agents/<agent_id>/context")
def context_window(agent_id: str) -> Response[Any]:
    rt = http.rt()
    org = http.org_id()
    with rt.db.connection() as conn:
        agent = get_agent(conn, org, agent_id)
        run = runs.active_runs(conn, org, agent.id)
        # The overview reads what a step would: any run will do as the frame.
        state = load(conn, run[0] if run else Run(organization_id=org, agent_id=agent.id), 0)
        assert state is not None
        archive = archives.archive_for_agent(conn, org, agent.id)
    solver = ToolRulesSolver.of(agent.tool_rules)
    core = render_memory_section(
        state.blocks,
        agent_type=agent.agent_type,
        provider=agent.llm_config.model_endpoint_type,
        tool_rule_lines=solver.prompt_lines(),
    )
    functions = [{"type": "function", "function": t.json_schema} for t in state.tools]
    system_tokens = len(agent.system) // CHARS_PER_TOKEN
    core_tokens = len(core) // CHARS_PER_TOKEN
    fn_tokens = len(str(functions)) // CHARS_PER_TOKEN
    msg_tokens = context_estimate(state, [])
    return http.json_reply(
        200,
        {
            "context_window_size_max": agent.llm_config.context_window,
            "context_window_size_current": msg_tokens + fn_tokens,
            "num_messages": len(agent.message_ids),
            "num_archival_memory": state.archival_count,
            "num_recall_memory": state.recall_count,
            "num_tokens_external_memory_summary": 0,
            "external_memory_summary": "",
            "num_tokens_system": system_tokens,
            "system_prompt": agent.system,
            "num_tokens_core_memory": core_tokens,
            "core_memory": core,
            "num_tokens_summary_memory": 0,
            "summary_memory": None,
            "num_tokens_functions_definitions": fn_tokens,
            "functions_definitions": functions,
            "num_tokens_messages": msg_tokens,
            "messages": [m.model_dump(mode="json") for m in state.context],
            "archive_id": archive.id if archive else None,
        },
    )


def _random_name() -> str:
    return f"{random.choice(_ADJECTIVES)}-{random.choice(_NOUNS)}"
