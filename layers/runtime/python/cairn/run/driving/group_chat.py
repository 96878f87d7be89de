"""Round-robin groups: one message to the group is a chain of turns, one run per turn.

The members speak in their order, `round_robin_turns` times in all. Each turn is a run of
its speaker on what was said since it last spoke: the sender's messages, and the other
members' replies relayed as user messages named by who said them. The end of a turn's
run starts the next one through the outbox, in the checkpoint that ended it
(`group_turn_command`), so a chain survives any process dying between turns. A turn's
run id is derived from the chain and the turn, so a redelivered start finds its run.
"""

from __future__ import annotations

from cairn.domain.groups import Group
from cairn.domain.ids import stable_id
from cairn.domain.messages import Message, TextContent
from cairn.store import agents, groups, messages, runs
from cairn.store.db import Database


def turn_run_id(chain: str, turn: int) -> str:
    """The run of a chain's turn: the first run is the chain's own id."""
    return chain if turn == 0 else stable_id("run", chain, str(turn))


def chain_metadata(group: Group, chain: str, turn: int, turns: int) -> dict[str, object]:
    return {
        "run_type": "group_message",
        "group_id": group.id,
        "group_chain": {"chain": chain, "turn": turn, "turns": turns},
    }


def speaker(group: Group, turn: int) -> str:
    return group.agent_ids[turn % len(group.agent_ids)]


def next_turn(
    db: Database, org_id: str, group_id: str, chain: str, turn: int
) -> tuple[Group, list[Message]] | None:
    """The group and what its speaker of `turn` is told; None when the chain ends there:
    the group was deleted or emptied meanwhile, or no one said anything it has not heard."""
    with db.connection() as conn:
        group = groups.get(conn, org_id, group_id)
    if group is None or not group.agent_ids:
        return None
    inputs = relayed(db, group, chain, turn)
    return (group, inputs) if inputs else None


def relayed(db: Database, group: Group, chain: str, turn: int) -> list[Message]:
    """What the speaker of `turn` is told: the chain's words since it last spoke."""
    org, agent_id = group.organization_id, speaker(group, turn)
    earlier = [turn_run_id(chain, k) for k in range(turn)]
    with db.connection() as conn:
        first = runs.get_run(conn, org, chain)
        said = messages.for_runs(conn, org, earlier)
        names = agents.names(conn, org, group.agent_ids)
    inputs = first.input_ids() if first else set()
    lines: list[tuple[int, Message]] = []  # (turn it was said in, what to tell)
    by_run = {run_id: k for k, run_id in enumerate(earlier)}
    for message in said:
        k = by_run[message.run_id or ""]
        if message.id in inputs:  # the sender's own words
            lines.append((k, _copy(message, agent_id, message.text, message.name)))
            continue
        text = message.search_text() if message.role == "assistant" else ""
        if text and message.agent_id != agent_id:  # another member's reply
            name = names.get(message.agent_id, message.agent_id)
            relay = _copy(message, agent_id, f"{name}: {text}", name)
            lines.append((k, relay.model_copy(update={"sender_id": message.agent_id})))
    spoke = [k for k in range(turn) if speaker(group, k) == agent_id]
    since = spoke[-1] + 1 if spoke else 0
    return [m for k, m in lines if k >= since]


def _copy(message: Message, agent_id: str, text: str, name: str | None) -> Message:
    return Message(
        organization_id=message.organization_id,
        agent_id=agent_id,
        role="user",
        content=[TextContent(text=text)],
        name=name,
        otid=message.otid,
        sender_id=message.sender_id,
        group_id=message.group_id,
    )
