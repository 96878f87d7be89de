"""Agents on the real engine, talking to the fake LLM server: helpers for step tests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cairn.assembly.build import engine_ports
from cairn.assembly.edges import SETTINGS
from cairn.domain import Agent, Block, LLMConfig, Message, Organization, TextContent
from cairn.domain.base import utc_now
from cairn.domain.runs import OutboxCommand, Run, RunOptions
from cairn.domain.tool_rules import ToolRule
from cairn.mcp_servers.calls import run_mcp_tool
from cairn.run.agents import provision_agent
from cairn.run.driving import lifecycle
from cairn.run.driving.lifecycle import StartedRun
from cairn.run.steps.step import Engine, StepOutcome
from cairn.store import agents, blocks, messages, outbox, runs
from cairn.store.db import Database
from cairn.tools.registry import BASE_TOOLS, MEMORY_TOOLS, default_tool_names, default_tool_rules
from cairn.tools.sandbox import Sandbox
from cairn.tools.subprocess_sandbox import SubprocessSandbox
from tests.fakes.llm_server import FakeLLM

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def engine_for(
    db: Database, fake: FakeLLM, *, fixed_clock: bool = False, sandbox: Sandbox | None = None
) -> Engine:
    """An engine on the fake's providers, with the ports assembly would give it (the local
    jail unless `sandbox` says otherwise)."""
    settings = SETTINGS(
        openai_api_key="sk-test",
        openai_base_url=f"{fake.base_url}/v1",
        anthropic_api_key="ant-test",
        anthropic_base_url=fake.base_url,
        gemini_api_key="gm-test",
        gemini_base_url=fake.base_url,
        bedrock_base_url=fake.base_url,  # the agents' Bedrock endpoint, as a VPC endpoint's
        llm_max_retries=0,
        llm_timeout_seconds=10,
    )
    # MCP tools are called as assembly hands them to the engine (mcp_servers/calls.py).
    return Engine(
        db,
        settings,
        sandbox=sandbox or SubprocessSandbox(),
        clock=(lambda: NOW) if fixed_clock else utc_now,
        external_tools=run_mcp_tool,
        **engine_ports(settings),
    )


def make_agent(
    db: Database,
    org: Organization,
    agent_type: str = "letta_v1_agent",
    *,
    rules: list[ToolRule] | None = None,
    tool_names: list[str] | None = None,
    context_window: int = 32_000,
    endpoint: str = "openai",
    base_rules: bool = True,
    **fields: Any,
) -> Agent:
    """An agent with the classic built-ins as well as its type's (the step tests exercise
    them all) and, unless told otherwise, the default rules of every tool it has."""
    sleeptime = bool(fields.get("enable_sleeptime"))
    sends = agent_type != "letta_v1_agent" or sleeptime
    classic = (
        []
        if sleeptime
        else [t for t in (*BASE_TOOLS, *MEMORY_TOOLS) if sends or t != "send_message"]
    )
    names = [
        *default_tool_names(agent_type, enable_sleeptime=sleeptime),
        *classic,
        *(tool_names or ()),
    ]
    tool_names = list(dict.fromkeys(names))
    if rules is None and base_rules:
        rules = default_tool_rules(tool_names)
    agent = Agent(
        organization_id=org.id,
        name=f"{agent_type}-agent",
        agent_type=agent_type,  # type: ignore[arg-type]
        llm_config=LLMConfig(
            model="gpt-test", model_endpoint_type=endpoint, context_window=context_window
        ),
        tool_rules=rules or [],
        **fields,
    )
    persona = Block(organization_id=org.id, label="persona", value="I am Sam.", limit=500)
    human = Block(organization_id=org.id, label="human", value="Name: Ada", limit=500)
    return provision_agent(
        db,
        agent,
        memory_blocks=[persona, human],
        tool_names=tool_names,
        include_base_tools=False,
        include_base_tool_rules=False,
        now=NOW,
    )


def on_model(db: Database, agent: Agent, config: LLMConfig) -> Agent:
    """The agent, switched to another model (its llm_config stored)."""
    with db.transaction() as conn:
        return agents.update(
            conn, agent.model_copy(update={"llm_config": config}), expected_version=agent.version
        )


def user(agent: Agent, text: str) -> Message:
    return Message(
        organization_id=agent.organization_id,
        agent_id=agent.id,
        role="user",
        content=[TextContent(text=text)],
    )


@dataclass
class Turn:
    run: Run
    new: list[Message]  # the run's messages, in order
    outcomes: list[StepOutcome]

    @property
    def roles(self) -> list[str]:
        return [m.role for m in self.new]


def drive(engine: Engine, command: OutboxCommand, *, limit: int = 60) -> list[StepOutcome]:
    """Run step after step as the queue would, publishing each continuation."""
    outcomes = []
    next_command: OutboxCommand | None = command
    while next_command is not None and len(outcomes) < limit:
        payload = next_command.payload
        outcome = engine.step(
            payload["organization_id"],
            payload["run_id"],
            payload["step_index"],
            agent_id=payload.get("agent_id"),  # as the step worker passes it
        )
        if outcome.status == "busy":  # another run holds the agent: the queue redelivers later
            time.sleep(0.05)
            continue
        outcomes.append(outcome)
        with engine.db.connection() as conn:
            if next_command.id is not None:
                outbox.mark_sent(conn, next_command.organization_id, next_command.id)
        next_command = outcome.next_command
    return outcomes


def start_run(
    engine: Engine, org_id: str, agent_id: str, inputs: list[Message], **options: Any
) -> StartedRun:
    """A run started on the engine's database, its first step for the caller to drive."""
    return lifecycle.start_run(engine.db, org_id, agent_id, inputs, RunOptions(**options))


def send(engine: Engine, agent: Agent, *inputs: Message | str, max_steps: int = 50) -> Turn:
    msgs = [user(agent, m) if isinstance(m, str) else m for m in inputs]
    run, command, *_ = start_run(engine, agent.organization_id, agent.id, msgs, max_steps=max_steps)
    outcomes = drive(engine, command)
    return finished(engine, run, outcomes)


def finished(engine: Engine, run: Run, outcomes: list[StepOutcome]) -> Turn:
    with engine.db.connection() as conn:
        stored = runs.get_run(conn, run.organization_id, run.id)
        assert stored is not None
        new = messages.list_for_agent(
            conn, run.organization_id, run.agent_id, run_id=run.id, order="asc"
        )
    return Turn(stored, new, outcomes)


def state_of(db: Database, agent: Agent) -> tuple[Agent, dict[str, str], list[Message]]:
    """The agent, its block values by label, and its context messages."""
    with db.connection() as conn:
        fresh = agents.get(conn, agent.organization_id, agent.id)
        assert fresh is not None
        values = {b.label: b.value for b in blocks.for_agent(conn, agent.organization_id, agent.id)}
        context = messages.get_many(conn, agent.organization_id, fresh.message_ids)
    return fresh, values, context


def someone_waits_for_a_lock(db: Database) -> bool:
    """Whether a session of the test database is blocked on a lock (a statement the test
    holds back with an open transaction)."""
    with db.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchone()
    return bool(row and row["n"])
