"""Creating an agent ready to run: its blocks, tools, rules and first messages, at once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.tools import Tool
from cairn.errors import InvalidArgumentError
from cairn.memory.initial import initial_messages
from cairn.memory.prompts import base_prompt
from cairn.run.steps import prompt
from cairn.sealing import Sealer
from cairn.store import agent_secrets, agents, blocks, messages, tools
from cairn.store.db import Database
from cairn.tools.registry import (
    BUILTIN_TOOLS,
    default_rules_apply,
    default_tool_names,
    default_tool_rules,
)
from cairn.tools.rules import ToolRuleViolation, check_prefilled


def provision_agent(
    db: Database,
    agent: Agent,
    *,
    memory_blocks: Sequence[Block] = (),
    existing_blocks: Sequence[Block] = (),
    tool_names: Sequence[str] | None = None,
    include_base_tools: bool = True,
    include_base_tool_rules: bool = True,
    secrets: Mapping[str, str] | None = None,
    sealer: Sealer | None = None,
    now: datetime,
) -> Agent:
    """Store the agent with everything it starts with (its secrets sealed by `sealer`), in
    one transaction."""
    if not agent.system:
        agent = agent.model_copy(update={"system": base_prompt(agent.agent_type)})
    wanted = list(tool_names or ())
    if include_base_tools:
        base = default_tool_names(agent.agent_type, enable_sleeptime=agent.enable_sleeptime)
        wanted = [*base, *(n for n in wanted if n not in base)]
    org = agent.organization_id
    with db.transaction() as conn:
        attached: list[Tool] = []
        for name in dict.fromkeys(wanted):
            tool = tools.get_by_name(conn, org, name)
            if tool is None and name in BUILTIN_TOOLS:
                tool = tools.upsert(conn, BUILTIN_TOOLS[name].as_tool(org))
            if tool is None:
                raise InvalidArgumentError(f"tools: no tool named `{name}`")
            attached.append(tool)
        rules = list(agent.tool_rules)
        wants_rules = default_rules_apply(agent.agent_type, enable_sleeptime=agent.enable_sleeptime)
        if include_base_tool_rules and wants_rules and not rules:
            rules = default_tool_rules(t.name for t in attached)
        try:
            _check_rules(rules, attached)
        except ToolRuleViolation as err:
            raise InvalidArgumentError(f"tool_rules: {err}") from None
        agent = agents.create(conn, agent.model_copy(update={"tool_rules": rules}))
        if secrets:
            if sealer is None:
                raise ValueError("secrets need a sealer")
            agent_secrets.put(conn, sealer, org, agent.id, secrets)
        for tool in attached:
            tools.attach(conn, org, agent.id, tool.id)
        stored_blocks = []
        for block in memory_blocks:
            stored = blocks.create(conn, block.model_copy(update={"organization_id": org}))
            blocks.attach(conn, org, agent.id, stored.id)
            stored_blocks.append(stored)
        for block in existing_blocks:
            if not blocks.attach(conn, org, agent.id, block.id):
                raise InvalidArgumentError(f"block_ids: block {block.id} cannot be attached")
            stored_blocks.append(block)
        system_text = prompt.system_text(agent, stored_blocks, now=now)
        first = messages.insert(conn, initial_messages(agent, system_text, now=now))
        agent = agents.update(
            conn,
            agent.model_copy(update={"message_ids": [m.id for m in first]}),
            expected_version=agent.version,
            kind="create",  # the agent's first version in its history, whole
        )
    return agent


def _check_rules(rules: Sequence[object], attached: Sequence[Tool]) -> None:
    schemas = {t.name: t.json_schema for t in attached}
    for rule in rules:
        name = getattr(rule, "tool_name", "")
        prefilled = getattr(rule, "args", None)
        if prefilled and name in schemas:
            check_prefilled(name, prefilled, schemas[name])
        for node in getattr(rule, "child_arg_nodes", None) or ():
            if node.args and node.name in schemas:
                check_prefilled(node.name, node.args, schemas[node.name])
