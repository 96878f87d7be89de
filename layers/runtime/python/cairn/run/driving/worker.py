"""The step worker: what a queue message does, by its kind (a step, a group's next turn, an
agent's message to another), and what its dead letter means (a step's fails its run).

Kinds of the edges and the background jobs (a channel's reply, an embedding job, a file's
processing) and what runs around a step are given at assembly (`Runtime.extensions`)."""

from __future__ import annotations

import json
import logging
from contextlib import ExitStack
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError

from cairn.domain.base import Value
from cairn.domain.runs import OutboxCommand
from cairn.llm.deadline import DeadlineReached
from cairn.run.driving import group_turns, sending
from cairn.run.driving.dispatch import after_step
from cairn.run.driving.watchdog import end_failed_run
from cairn.run.runtime import QueueKind, Runtime
from cairn.store import dead_letters, outbox, runs

logger = logging.getLogger(__name__)


class StepMessage(Value):
    # What else a step message carries (a channel's context, e.g. its chat) is kept for the
    # contexts around the step (`Extensions.around_step`); the worker reads none of it.
    model_config = ConfigDict({**Value.model_config, "extra": "allow"})

    organization_id: str
    run_id: str
    step_index: int = Field(ge=0)
    agent_id: str | None = None  # the run's agent (a hint: commands before it had none)


class GroupTurnMessage(Value):
    kind: Literal["group_turn"]
    organization_id: str
    group_id: str
    chain: str
    turn: int = Field(ge=1)
    turns: int = Field(ge=2)


class AgentMessage(Value):
    kind: Literal["agent_message"]
    organization_id: str
    sender_id: str
    sender_name: str
    sender_run_id: str
    agent_id: str
    run_id: str
    text: str


def parse(rt: Runtime, body: str) -> dict[str, Any]:
    """The queue message's command; ValueError (naming what is wrong) for any other shape."""
    try:
        raw = json.loads(body)
    except ValueError:
        raise ValueError("not a step or embedding command (the body is not JSON)") from None
    try:
        return _kind(rt, raw).shape.model_validate(raw).model_dump()
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in err.errors()[:3]
        )
        raise ValueError(f"not a step or embedding command ({problems})") from None


def run_step(rt: Runtime, payload: dict[str, Any], command: OutboxCommand | None = None) -> str:
    """Do what a message says (`command`: its outbox row, when the caller has it); raises
    (so the queue redelivers) on transient failures."""
    return _kind(rt, payload).run(rt, payload, command)


def run_message(rt: Runtime, body: str, receives: int) -> str:
    """One message of the step queue. One nothing can act on is kept as a poison record
    and acknowledged: redelivering it could never succeed."""
    try:
        payload = parse(rt, body)
    except ValueError as err:
        return poison(rt, "step-queue", body, str(err), receives)
    return run_step(rt, payload)


def dead_letter(rt: Runtime, body: str, receives: int) -> str:
    """One message of the dead-letter queue, whatever its shape: recorded, never retried
    (raises only while the database cannot be reached, so nothing is dropped unrecorded)."""
    try:
        payload = parse(rt, body)
    except ValueError as err:
        return poison(rt, "step-dlq", body, str(err), receives)
    return _kind(rt, payload).dead(rt, payload, body, receives)


def _step(rt: Runtime, payload: dict[str, Any], command: OutboxCommand | None) -> str:
    org, run_id, index = payload["organization_id"], payload["run_id"], payload["step_index"]
    command = command or _command(rt, org, run_id, index)
    try:
        with ExitStack() as around:
            for context in rt.extensions.around_step:
                around.enter_context(context(rt, org, payload))
            outcome = rt.engine.step(
                org,
                run_id,
                index,
                messenger=sending.Messenger(rt),
                agent_id=payload.get("agent_id"),
            )
    except DeadlineReached as err:
        # The model took the step's whole invocation (every retry included): it has failed,
        # as a timeout after the SDK's retries fails the run. Delivering the step again
        # would only hold another worker as long (three times over before the DLQ).
        detail = f"The model did not answer within the step's time: {err}"
        end_failed_run(rt, org, run_id, "llm_api_error", detail, kind="timeout")
        return "timed_out"
    after_step(rt.db, rt.queue, command, outcome, cap=rt.settings.org_max_runs)
    return outcome.status


def _step_dead(rt: Runtime, payload: dict[str, Any], body: str, receives: int) -> str:
    org, run_id, index = payload["organization_id"], payload["run_id"], payload["step_index"]
    reason = f"step {index} failed on each of {receives} deliveries; see the step function logs"
    ended = end_failed_run(rt, org, run_id, "error", reason)
    if ended is None:
        return poison(rt, "step-dlq", body, f"no run {run_id} in organization {org}", receives)
    if ended.status != "failed" or (ended.error or {}).get("message") != reason:
        return f"already {ended.status}"  # a step of a later delivery ended it first
    logger.error("run %s failed: %s", run_id, reason)
    return "failed"


def _group_turn(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    return group_turns.start_turn(rt, payload)


def _group_turn_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    # The turns before it are kept; the group's message ends short of its last turns.
    return poison(rt, "step-dlq", body, "group turn failed to start", receives)


def _agent_message(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    return sending.deliver(rt, payload)


def _agent_message_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    return poison(rt, "step-dlq", body, "an agent's message failed to start its run", receives)


# The run's own kinds; the others are given at assembly (`Runtime.extensions.kinds`).
KINDS: dict[str | None, QueueKind] = {
    None: QueueKind(StepMessage, _step, _step_dead),
    "group_turn": QueueKind(GroupTurnMessage, _group_turn, _group_turn_dead),
    "agent_message": QueueKind(AgentMessage, _agent_message, _agent_message_dead),
}


def _kind(rt: Runtime, raw: object) -> QueueKind:
    """What a message is, by its `kind` (none: a step): the one place that decides, for the
    SQS consumers and the in-process queue alike."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if isinstance(kind, str) and kind in rt.extensions.kinds:
        return rt.extensions.kinds[kind]
    return KINDS.get(kind, KINDS[None])


def poison(rt: Runtime, source: str, body: str, reason: str, receives: int) -> str:
    with rt.db.connection() as conn:
        record = dead_letters.record(conn, source, body, reason, receives)
    logger.error("poison message kept as dead letter %s: %s", record, reason)
    return "poison"


def _command(rt: Runtime, org: str, run_id: str, index: int) -> OutboxCommand:
    with rt.db.connection() as conn:
        stored = outbox.by_dedup_key(conn, org, f"{run_id}:{index}")
    if stored is not None:
        return stored
    # A message without its outbox row (published by hand): act on it all the same.
    with rt.db.connection() as conn:
        run = runs.get_run(conn, org, run_id)
    if run is None:
        raise ValueError(f"step message for unknown run {run_id}")
    return OutboxCommand(
        organization_id=org,
        agent_id=run.agent_id,
        run_id=run_id,
        kind="step",
        payload={"organization_id": org, "run_id": run_id, "step_index": index},
        dedup_key=f"{run_id}:{index}",
    )
