"""The built-in tools that reach other agents (`send_message_to_agent_async`, Letta's
`send_message_to_agent_and_wait_for_reply` and its by-tags form), as a step's ToolContext
offers them (run/backends/context.py): a message sent after the checkpoint, or a turn of each agent
asked, run here within the step's time."""

from __future__ import annotations

from time import monotonic

from cairn.config import Settings
from cairn.domain.runs import OutboxCommand, agent_message_command
from cairn.llm import deadline
from cairn.run.backends import agent_messages
from cairn.run.backends.agent_messages import Messenger
from cairn.run.steps.state import StepState
from cairn.store import agents
from cairn.store.db import Database
from cairn.tools.context import current_call


class AgentTools:
    """Mixed into the step's ToolContext, whose fields these are."""

    state: StepState
    db: Database
    settings: Settings | None
    messenger: Messenger | None
    outgoing: list[OutboxCommand]

    def send_to_agent(self, message: str, agent_id: str) -> str:
        agent, run = self.state.agent, self.state.run
        self._existing([agent_id])
        text = agent_messages.async_text(agent.id, message)
        command = agent_message_command(run, agent_id, text, current_call(), agent.name)
        if all(c.dedup_key != command.dedup_key for c in self.outgoing):
            self.outgoing.append(command)
        return agent_messages.SENT

    def ask_agents(
        self,
        message: str,
        *,
        agent_ids: list[str] | None = None,
        tags: tuple[list[str], list[str]] | None = None,
    ) -> str:
        agent = self.state.agent
        if self.messenger is None or self.settings is None:
            raise ValueError("Messages to other agents cannot be sent from here.")
        if agent_ids is not None:
            if agent.id in agent_ids:
                raise ValueError("An agent cannot wait for its own reply: this turn is it.")
            self._existing(agent_ids)
            text = agent_messages.wait_text(agent.id, message)
        else:
            assert tags is not None
            with self.db.connection() as conn:
                found = agents.matching_tags(
                    conn, agent.organization_id, *tags, limit=agent_messages.TAG_MATCH_LIMIT
                )
            # Not the sender: its own turn holds it while it waits (Letta would run it).
            agent_ids = [a for a in found if a != agent.id]
            text = agent_messages.tags_text(message)
        budget = self.settings.agent_reply_seconds
        if (left := deadline.seconds_left()) is not None:
            budget = min(budget, max(left, 0.0))
        until = monotonic() + budget
        shown = []
        for target in agent_ids:
            reply = self.messenger.ask(
                agent.organization_id,
                target,
                [agent_messages.incoming(agent.organization_id, target, text, agent.name)],
                run_id=agent_messages.child_run_id(self.state.run.id, current_call(), target),
                metadata=agent_messages.metadata(agent.id, self.state.run.id),
                budget_seconds=max(until - monotonic(), 0.0),
            )
            shown.append(agent_messages.shown(reply, budget))
        # Letta answers with Python's text of its result (str(dict), str(list)).
        return str(shown[0]) if tags is None else str(shown)

    def _existing(self, agent_ids: list[str]) -> None:
        with self.db.connection() as conn:
            named = agents.names(conn, self.state.agent.organization_id, agent_ids)
        if missing := [a for a in agent_ids if a not in named]:
            raise ValueError(f"Agent with ID {missing[0]} not found")
