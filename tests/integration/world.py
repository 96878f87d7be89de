"""Builders of real rows, so store tests read as specifications."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.domain import (
    Agent,
    Archive,
    Block,
    Group,
    JournalEntry,
    Message,
    Organization,
    OutboxCommand,
    Passage,
    Run,
    Step,
    TextContent,
    Tool,
    User,
)
from cairn.store import (
    Connection,
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


@dataclass
class World:
    org: Organization
    user: User
    api_key_id: str
    api_key: str
    agent: Agent
    block: Block
    tool: Tool
    message: Message
    archive: Archive
    passage: Passage
    run: Run
    step: Step
    outbox_id: int
    group: Group


def build_world(conn: Connection, name: str = "acme") -> World:
    org = tenancy.create_organization(conn, Organization(name=name))
    user = tenancy.create_user(conn, User(organization_id=org.id, name="ada"))
    key, plain = tenancy.create_api_key(conn, org.id, user.id, name="default")
    agent = agents.create(conn, make_agent(org.id))
    block = blocks.create(conn, Block(organization_id=org.id, label="persona", value="I help."))
    blocks.attach(conn, org.id, agent.id, block.id)
    tool = tools.upsert(conn, Tool(organization_id=org.id, name="roll_dice", source_code="..."))
    tools.attach(conn, org.id, agent.id, tool.id)
    [message] = messages.insert(
        conn,
        [
            Message(
                organization_id=org.id,
                agent_id=agent.id,
                role="user",
                content=[TextContent(text="hello")],
            )
        ],
    )
    archive = archives.create_archive(conn, Archive(organization_id=org.id, name="default"))
    archives.attach_archive(conn, org.id, archive.id, agent.id)
    passage, _ = archives.insert_passage(
        conn, Passage(organization_id=org.id, archive_id=archive.id, text="the sky is blue")
    )
    run = runs.create_run(conn, Run(organization_id=org.id, agent_id=agent.id))
    step = steps.record_step(
        conn, Step(organization_id=org.id, run_id=run.id, agent_id=agent.id, step_index=0)
    )
    assert step is not None
    step_journal.write(
        conn,
        JournalEntry(
            organization_id=org.id, run_id=run.id, step_index=0, key="llm", payload={"text": "hi"}
        ),
    )
    command = outbox.add(
        conn,
        OutboxCommand(
            organization_id=org.id,
            agent_id=agent.id,
            run_id=run.id,
            kind="step",
            payload={"step_index": 1},
            dedup_key=f"{run.id}:1",
        ),
    )
    assert command is not None and command.id is not None
    sleeper = agents.create(
        conn, make_agent(org.id, name="helper-sleeptime", agent_type="sleeptime_agent")
    )
    group = groups.create(
        conn,
        Group(
            organization_id=org.id,
            manager_agent_id=agent.id,
            agent_ids=[sleeper.id],
            sleeptime_agent_frequency=5,
        ),
    )
    return World(
        org,
        user,
        key.id,
        plain,
        agent,
        block,
        tool,
        message,
        archive,
        passage,
        run,
        step,
        command.id,
        group,
    )


def make_agent(org_id: str, name: str = "helper", **fields: object) -> Agent:
    return Agent.model_validate(
        {"organization_id": org_id, "name": name, "llm_config": {"model": "gpt-4o-mini"}, **fields}
    )
