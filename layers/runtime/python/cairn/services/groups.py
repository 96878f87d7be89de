"""Groups: the sleeptime groups Cairn builds, and Letta's multi-agent groups.

A message to a round-robin group is a chain of turns (run/driving/group_chat.py); one to a
sleeptime group goes to its primary agent, whose turns start the sleeptime agents.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

from cairn.domain.groups import Group, round_robin_turns
from cairn.domain.ids import new_id
from cairn.domain.messages import Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, Run, RunOptions, Usage
from cairn.errors import ConflictError, UnprocessableError, found, not_found
from cairn.run.driving import group_chat, sending
from cairn.run.driving import streaming as streams
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services import messages as message_service
from cairn.services.pages import Page
from cairn.services.requests import (
    GroupCreate,
    GroupUpdate,
    LettaRequest,
    ManagerConfig,
    MessageUpdate,
)
from cairn.store import agents, blocks, groups, messages, runs
from cairn.store.db import Connection

# Letta 0.16.1 has these kinds but cannot run a message through them: every multi-agent
# class's constructor calls the new agent base class with the old arguments (TypeError),
# and the supervisor's step is commented out. Cairn stores them and says so on send.
NOT_RUN = {
    "supervisor": "supervisor groups do not run messages (Letta 0.16.1's supervisor has no step)",
    "dynamic": "dynamic groups do not run messages in Cairn: send to round_robin groups",
    "voice_sleeptime": "voice_sleeptime groups do not run messages in Cairn",
    "swarm": "swarm groups do not run messages",
}


def _fetch(conn: Connection, org: str, group_id: str) -> Group:
    return found(groups.get(conn, org, group_id), "Group", group_id)


def retrieve(rt: Runtime, org: str, group_id: str) -> Group:
    with rt.db.connection() as conn:
        return _fetch(conn, org, group_id)


def create(rt: Runtime, org: str, req: GroupCreate) -> Group:
    config = req.manager_config
    if config.manager_type != "round_robin" and config.manager_agent_id is None:
        raise UnprocessableError(
            f"manager_config.manager_agent_id: a {config.manager_type} group needs a manager"
        )
    _check_buffers(config.max_message_buffer_length, config.min_message_buffer_length)
    group = Group(
        organization_id=org,
        manager_type=config.manager_type,
        manager_agent_id=config.manager_agent_id,
        agent_ids=list(req.agent_ids),
        description=req.description,
        max_turns=config.max_turns if config.manager_type in ("round_robin", "dynamic") else None,
        termination_token=(config.termination_token or "DONE!")
        if config.manager_type == "dynamic"
        else None,
        sleeptime_agent_frequency=config.sleeptime_agent_frequency
        if config.manager_type == "sleeptime"
        else None,
        max_message_buffer_length=config.max_message_buffer_length,
        min_message_buffer_length=config.min_message_buffer_length,
        shared_block_ids=list(dict.fromkeys(req.shared_block_ids)),
        hidden=req.hidden,
    )
    with rt.db.transaction() as conn:
        _check_members(conn, org, group.agent_ids, group.manager_agent_id)
        for block_id in group.shared_block_ids:
            _block(conn, org, block_id)
        return groups.create(conn, group)


def modify(rt: Runtime, org: str, group_id: str, req: GroupUpdate) -> Group:
    """Letta's modify_group: the kind cannot change; fields left out (or empty) are kept."""
    with rt.db.transaction() as conn:
        group = _fetch(conn, org, group_id)
        changes: dict[str, object] = {}
        if (config := req.manager_config) is not None:
            changes = _config_changes(group, config)
        if req.description:
            changes["description"] = req.description
        if req.agent_ids:
            changes["agent_ids"] = list(req.agent_ids)
        if req.shared_block_ids is not None:
            for block_id in req.shared_block_ids:
                _block(conn, org, block_id)
            changes["shared_block_ids"] = list(dict.fromkeys(req.shared_block_ids))
        edited = group.model_copy(update=changes)
        _check_buffers(edited.max_message_buffer_length, edited.min_message_buffer_length)
        if "agent_ids" in changes or "manager_agent_id" in changes:
            _check_members(conn, org, edited.agent_ids, edited.manager_agent_id)
        return groups.update(conn, edited, members="agent_ids" in changes)


def _config_changes(group: Group, config: ManagerConfig) -> dict[str, object]:
    if config.manager_type != group.manager_type:
        raise UnprocessableError(
            f"manager_config.manager_type: this group is {group.manager_type} "
            "(a group's kind cannot change after creation)"
        )
    fields = {
        "round_robin": ("max_turns",),
        "supervisor": ("manager_agent_id",),
        "dynamic": ("manager_agent_id", "max_turns", "termination_token"),
        "sleeptime": ("manager_agent_id", "sleeptime_agent_frequency"),
        "voice_sleeptime": (
            "manager_agent_id",
            "max_message_buffer_length",
            "min_message_buffer_length",
        ),
    }.get(group.manager_type, ())
    return {f: getattr(config, f) for f in fields if getattr(config, f) is not None}


def _check_members(conn: Connection, org: str, agent_ids: list[str], manager: str | None) -> None:
    if len(set(agent_ids)) != len(agent_ids):
        raise UnprocessableError("agent_ids: an agent is listed twice")
    wanted = [*agent_ids, *([manager] if manager else [])]
    missing = [a for a in wanted if a not in agents.names(conn, org, wanted)]
    if missing:
        raise not_found(f"Agent(s) not found: {', '.join(sorted(set(missing)))}")


def _check_buffers(longest: int | None, shortest: int | None) -> None:
    """Letta's voice_sleeptime rule: both or neither, each over 4, max above min."""
    if (longest is None) != (shortest is None):
        raise UnprocessableError(
            "max_message_buffer_length, min_message_buffer_length: give both or neither"
        )
    if longest is not None and shortest is not None and longest <= shortest:
        raise UnprocessableError(
            "max_message_buffer_length: must be greater than min_message_buffer_length"
        )


def _block(conn: Connection, org: str, block_id: str) -> None:
    found(blocks.get(conn, org, block_id), "Block", block_id)


def delete(rt: Runtime, org: str, group_id: str) -> None:
    """The group goes; its agents and their messages stay (Letta's delete_group)."""
    with rt.db.transaction() as conn:
        if not groups.delete(conn, org, group_id):
            raise not_found("Group", group_id)


def share_block(rt: Runtime, org: str, group_id: str, block_id: str, *, attach: bool) -> None:
    """Add a block to (or take it from) the group's shared blocks; attaching twice is a
    no-op, as in Letta."""
    with rt.db.transaction() as conn:
        group = _fetch(conn, org, group_id)
        _block(conn, org, block_id)
        kept = [b for b in group.shared_block_ids if b != block_id]
        shared = [*kept, block_id] if attach else kept
        if shared != group.shared_block_ids:
            groups.update(conn, group.model_copy(update={"shared_block_ids": shared}))


def history(
    rt: Runtime,
    org: str,
    group_id: str,
    *,
    page: Page,
) -> list[Message]:
    """What was said in the group, shown oldest first (as an agent's history is): a group
    with a manager lists the manager's messages, as Letta 0.16.1 does."""
    with rt.db.connection() as conn:
        group = _fetch(conn, org, group_id)
        rows = messages.list_for_agent(
            conn,
            org,
            group.manager_agent_id,
            group_id=group.id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )
    if page.order == "desc":
        rows.reverse()
    return [m for m in rows if not m.is_err]


def edit_message(
    rt: Runtime, org: str, group_id: str, message_id: str, req: MessageUpdate
) -> Message:
    """Letta's modify_group_message: the message must be one of the group's agents'."""
    with rt.db.connection() as conn:
        group = _fetch(conn, org, group_id)
        message = messages.get(conn, org, message_id)
    members = {*group.agent_ids, *([group.manager_agent_id] if group.manager_agent_id else [])}
    theirs = message is not None and message.agent_id in members
    message = found(message if theirs else None, "Message", message_id)
    return message_service.edit(rt, org, message.agent_id, message_id, req)


def reset_messages(rt: Runtime, org: str, group_id: str) -> None:
    """Delete what was said in the group, from its agents' histories and context windows."""
    with rt.db.transaction() as conn:
        group = _fetch(conn, org, group_id)
        members = [*group.agent_ids, *([group.manager_agent_id] if group.manager_agent_id else [])]
        if not all(agents.lease_free(conn, org, a) for a in members):
            raise ConflictError("An agent of the group is running: reset when its run ends")
        groups.delete_messages(conn, org, group.id)


@dataclass
class GroupSent:
    runs: list[Run]  # the runs of the message's turns so far, in order
    messages: list[Message]  # what they said (their inputs left out)
    done: bool  # whether every turn has ended


def send(rt: Runtime, org: str, group_id: str, req: LettaRequest, *, wait: bool) -> GroupSent:
    """A message to the group. With `wait`, its turns run (or are waited for) within the
    sync budget; the turns left then go on in the background."""
    started = time.monotonic()
    group, chain_id, turns, sent = _start(rt, org, group_id, req, wait=wait)
    chain = [sent.run]
    if wait and chain_id is not None:
        left = sending.sync_budget(rt) - (time.monotonic() - started)
        chain = _follow(rt, group, chain_id, turns, sent.run, left)
    last = chain[-1]
    done = last.status in TERMINAL_RUN_STATUSES and (
        chain_id is None or not _goes_on(rt, group, chain_id, turns, last, len(chain))
    )
    said = [m for run in chain for m in message_service.produced(rt, sending.Sent(run))]
    return GroupSent(chain, said if wait else [], done)


def stream(rt: Runtime, org: str, group_id: str, req: LettaRequest) -> streams.Streamed:
    """A message to the group whose turns' messages are sent as each of their steps
    commits. The first turn starts now (a bad request is an error before any event); every
    turn runs on the queue, as the chain's later turns always do, and the stream follows
    the chain's runs from the database in turn, within the stream's time."""
    group, chain_id, turns, sent = _start(rt, org, group_id, req, wait=False)
    events = _chain_events(
        rt,
        group,
        chain_id,
        turns,
        sent.run,
        streams.stream_budget(rt),
        ping=req.include_pings is not False,
    )
    return streams.Streamed(sent.run, events)


def _chain_events(
    rt: Runtime,
    group: Group,
    chain_id: str | None,
    turns: int,
    first: Run,
    budget: float,
    *,
    ping: bool,
) -> Iterator[streams.Event]:
    org, ends_at = group.organization_id, time.monotonic() + budget
    run, turn, usage = first, 0, Usage()
    while True:
        shown = streams.inputs_of(run)  # what the turn was told is not what it said
        last = run
        for event in streams.follow(rt, org, run.id, shown, ends_at - time.monotonic(), ping=ping):
            if isinstance(event, streams.Ended):
                last = event.run
            else:
                yield event
        usage, turn = usage + last.usage, turn + 1
        following = None
        if chain_id is not None:
            following = _next_run(rt, group, chain_id, turns, last, turn, ends_at)
        if following is None:
            yield streams.Ended(last, usage)  # the chain's usage, as a sync send answers it
            return
        run = following


def _start(
    rt: Runtime, org: str, group_id: str, req: LettaRequest, *, wait: bool
) -> tuple[Group, str | None, int, sending.Sent]:
    """The message's first turn started: the group, the chain's id (round robin), the
    number of turns, and the first turn's run."""
    with rt.db.connection() as conn:
        group = _fetch(conn, org, group_id)
    if group.manager_type in NOT_RUN:
        raise UnprocessableError(f"manager_config.manager_type: {NOT_RUN[group.manager_type]}")
    metadata: dict[str, object] = {"group_id": group.id}
    run_id: str | None = None
    if group.manager_type == "sleeptime":
        first, turns = group.manager_agent_id, 1
    else:
        if not group.agent_ids:
            raise UnprocessableError("agent_ids: the group has no agents to speak")
        first, turns, run_id = group.agent_ids[0], round_robin_turns(group), new_id("run")
        metadata = group_chat.chain_metadata(group, run_id, 0, turns)
    assert first is not None
    inputs = message_service.inputs(rt, org, first, req)
    if any(m.role == "approval" for m in inputs):
        raise UnprocessableError("messages: answer an approval on the agent that asked for it")
    inputs = [m.model_copy(update={"group_id": group.id}) for m in inputs]
    options = RunOptions(
        max_steps=req.max_steps, run_id=run_id, metadata={"run_type": "send_message", **metadata}
    )
    sent = sending.send(rt, org, first, inputs, options, wait=wait)
    return group, run_id, turns, sent


def _follow(
    rt: Runtime, group: Group, chain: str, turns: int, first: Run, budget: float
) -> list[Run]:
    """The chain's runs, waiting (within `budget`) for each turn's run to be started by
    the end of the one before and to end in turn."""
    org, ends_at = group.organization_id, time.monotonic() + budget
    followed = [first]
    while run := _next_run(rt, group, chain, turns, followed[-1], len(followed), ends_at):
        followed.append(sending.wait_for(rt, org, run.id, max(ends_at - time.monotonic(), 0)))
    return followed


def _next_run(
    rt: Runtime, group: Group, chain: str, turns: int, last: Run, turn: int, ends_at: float
) -> Run | None:
    """The run of the chain's turn `turn` once the worker has started it; None when the
    chain ends with `last` or the time is up first."""
    if time.monotonic() >= ends_at or not _goes_on(rt, group, chain, turns, last, turn):
        return None
    return _appeared(rt, group.organization_id, group_chat.turn_run_id(chain, turn), ends_at)


def _goes_on(rt: Runtime, group: Group, chain: str, turns: int, last: Run, turn: int) -> bool:
    """Whether the chain has a turn `turn` after `last`: not if `last` failed, waits for an
    approval or was the last turn, nor if the worker ends the chain there."""
    if last.status != "completed" or last.stop_reason == "requires_approval" or turn >= turns:
        return False
    return group_chat.next_turn(rt.db, group.organization_id, group.id, chain, turn) is not None


def _appeared(rt: Runtime, org: str, run_id: str, ends_at: float) -> Run | None:
    """The run once it exists (the worker starts it after the turn before ends)."""
    interval = sending.FIRST_POLL_SECONDS
    while True:
        with rt.db.connection() as conn:
            run = runs.get_run(conn, org, run_id)
        if run is not None or time.monotonic() >= ends_at:
            return run
        with rt.yielding():
            time.sleep(interval)
        interval = min(interval * 1.5, sending.MAX_POLL_SECONDS)


def list_groups(
    rt: Runtime,
    org: str,
    *,
    manager_type: str | None,
    agent_id: str | None = None,
    page: Page,
) -> list[Group]:
    with rt.db.connection() as conn:
        if agent_id is not None:
            agent_service.fetch(conn, org, agent_id)
        return groups.list_groups(
            conn,
            org,
            manager_type=manager_type,
            agent_id=agent_id,
            after=page.after,
            before=page.before,
            limit=page.limit,
            order=page.order,
        )


def count(rt: Runtime, org: str) -> int:
    with rt.db.connection() as conn:
        return groups.count(conn, org)
