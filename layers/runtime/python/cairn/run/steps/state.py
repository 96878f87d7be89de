"""Everything one step reads, loaded before the model is called (no lock held after)."""

from __future__ import annotations

from dataclasses import dataclass, field

from cairn.domain.agents import Agent
from cairn.domain.blocks import Block
from cairn.domain.folders import AgentFolder
from cairn.domain.messages import Message
from cairn.domain.passages import Archive
from cairn.domain.runs import Run
from cairn.domain.tools import Tool
from cairn.store import agents, archives, blocks, context, files, messages, tools
from cairn.store.db import Connection


@dataclass
class StepState:
    run: Run
    step_index: int
    agent: Agent
    blocks: list[Block]
    tools: list[Tool]
    context: list[Message]  # the messages of agent.message_ids, [0] the system message
    archive: Archive | None
    recall_count: int
    archival_count: int
    archival_tags: list[str] = field(default_factory=list)
    # Where the context's entries stand (store/context.py): the checkpoint writes only the
    # entries that change.
    context_positions: list[int] = field(default_factory=list)
    # The folders attached to the agent and its views of their files (`<directories>`).
    folders: list[AgentFolder] = field(default_factory=list)

    @property
    def org_id(self) -> str:
        return self.agent.organization_id

    def run_messages(self) -> list[Message]:
        """This run's messages still in context, oldest first."""
        return [m for m in self.context if m.run_id == self.run.id]

    def tool_history(self) -> list[str]:
        """Names of the tools this run has called, in order (the solver's history)."""
        return [
            call.function.name
            for m in self.run_messages()
            if m.role in ("assistant", "approval")
            for call in m.tool_calls or ()
        ]

    def last_tool_output(self) -> str | None:
        for m in reversed(self.run_messages()):
            if m.role == "tool" and m.tool_returns:
                return m.tool_returns[-1].func_response
        return None


def load(conn: Connection, run: Run, step_index: int) -> StepState | None:
    org, agent_id = run.organization_id, run.agent_id
    agent = agents.get(conn, org, agent_id)
    if agent is None:
        return None
    archive = archives.archive_for_agent(conn, org, agent_id)
    entries = context.read(conn, agent_id)
    return StepState(
        run=run,
        step_index=step_index,
        agent=agent,
        blocks=blocks.for_agent(conn, org, agent_id),
        tools=tools.for_agent(conn, org, agent_id),
        context=messages.get_many(conn, org, [i for _, i in entries]),
        context_positions=[p for p, _ in entries],
        archive=archive,
        recall_count=messages.count_for_agent(conn, org, agent_id),
        archival_count=archives.count_passages(conn, org, archive.id) if archive else 0,
        archival_tags=archives.archive_tags(conn, org, archive.id) if archive else [],
        folders=files.agent_folders(conn, agent_id),
    )
