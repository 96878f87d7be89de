"""The step worker: what a queue message does, by its kind (a step, an embedding job, a
group's next turn), and what its dead letter means (a step's fails its run)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from cairn.domain.base import Value
from cairn.domain.runs import OutboxCommand, file_job_command
from cairn.engine import file_jobs
from cairn.engine.embedding_jobs import EmbeddingFailed, embed_agent
from cairn.llm.deadline import DeadlineReached
from cairn.orchestration import agent_messages, group_turns, telegram
from cairn.orchestration.assembly.parts import Runtime
from cairn.orchestration.dispatch import after_step
from cairn.orchestration.watchdog import end_failed_run
from cairn.store import dead_letters, outbox, runs

logger = logging.getLogger(__name__)


class StepMessage(Value):
    organization_id: str
    run_id: str
    step_index: int = Field(ge=0)
    telegram: dict[str, Any] | None = None  # a Telegram chat's: {bot_id, chat_id}


class EmbedMessage(Value):
    kind: Literal["embed"]
    organization_id: str
    agent_id: str


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


class TelegramReply(Value):
    kind: Literal["telegram_reply"]
    organization_id: str
    run_id: str
    bot_id: str
    chat_id: int
    reply_to: int | None = None


class FileJob(Value):
    kind: Literal["file_job"]
    organization_id: str
    file_id: str


# What each kind of queue message is, does, and means when its last delivery failed: the
# one place that decides (the SQS consumers and the in-process queue both come here).
@dataclass(frozen=True)
class Kind:
    shape: type[BaseModel]
    run: Callable[[Runtime, dict[str, Any], OutboxCommand | None], str]
    dead: Callable[[Runtime, dict[str, Any], str, int], str]


def parse(body: str) -> dict[str, Any]:
    """The queue message's command; ValueError (naming what is wrong) for any other shape."""
    try:
        raw = json.loads(body)
    except ValueError:
        raise ValueError("not a step or embedding command (the body is not JSON)") from None
    try:
        return _kind(raw).shape.model_validate(raw).model_dump()
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in err.errors()[:3]
        )
        raise ValueError(f"not a step or embedding command ({problems})") from None


def run_step(rt: Runtime, payload: dict[str, Any], command: OutboxCommand | None = None) -> str:
    """Do what a message says (`command`: its outbox row, when the caller has it); raises
    (so the queue redelivers) on transient failures."""
    return _kind(payload).run(rt, payload, command)


def run_message(rt: Runtime, body: str, receives: int) -> str:
    """One message of the step queue. One nothing can act on is kept as a poison record
    and acknowledged: redelivering it could never succeed."""
    try:
        payload = parse(body)
    except ValueError as err:
        return poison(rt, "step-queue", body, str(err), receives)
    return run_step(rt, payload)


def dead_letter(rt: Runtime, body: str, receives: int) -> str:
    """One message of the dead-letter queue, whatever its shape: recorded, never retried
    (raises only while the database cannot be reached, so nothing is dropped unrecorded)."""
    try:
        payload = parse(body)
    except ValueError as err:
        return poison(rt, "step-dlq", body, str(err), receives)
    return _kind(payload).dead(rt, payload, body, receives)


def _step(rt: Runtime, payload: dict[str, Any], command: OutboxCommand | None) -> str:
    org, run_id, index = payload["organization_id"], payload["run_id"], payload["step_index"]
    command = command or _command(rt, org, run_id, index)
    try:
        with telegram.typing(rt, org, payload.get("telegram")):
            outcome = rt.engine.step(org, run_id, index, messenger=agent_messages.Messenger(rt))
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


def _embed(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    try:
        written = embed_agent(rt.engine, payload["organization_id"], payload["agent_id"])
    except EmbeddingFailed as err:  # held back: delivering it again would only skip it
        return f"held: {err}"[:200]
    return f"embedded {written}"


def _embed_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    # Nothing waits on it: the sweeper's backfill embeds whatever is still missing.
    return poison(rt, "step-dlq", body, "embedding job failed on each delivery", receives)


def _group_turn(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    return group_turns.start_turn(rt, payload)


def _group_turn_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    # The turns before it are kept; the group's message ends short of its last turns.
    return poison(rt, "step-dlq", body, "group turn failed to start", receives)


def _agent_message(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    return agent_messages.deliver(rt, payload)


def _agent_message_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    return poison(rt, "step-dlq", body, "an agent's message failed to start its run", receives)


def _telegram_reply(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    return telegram.reply(rt, payload)


def _telegram_reply_dead(rt: Runtime, _: dict[str, Any], body: str, receives: int) -> str:
    return poison(rt, "step-dlq", body, "a Telegram reply failed on each delivery", receives)


def _file_job(rt: Runtime, payload: dict[str, Any], _: OutboxCommand | None) -> str:
    org, file_id = payload["organization_id"], payload["file_id"]
    assert rt.documents is not None, "the runtime has a document store (build_runtime)"
    status = file_jobs.process(rt.engine, org, file_id, rt.documents.get)
    if status == "more":  # out of this invocation's time: the next one goes on
        rt.queue.publish(
            file_job_command(
                org, file_id, attempt=int(time.time()), lanes=rt.settings.org_files_at_once
            )
        )
    return status


def _file_job_dead(rt: Runtime, payload: dict[str, Any], body: str, receives: int) -> str:
    reason = f"processing failed on each of {receives} deliveries; see the files function logs"
    file_jobs.fail(rt.engine, payload["organization_id"], payload["file_id"], reason)
    return "failed"


KINDS: dict[object, Kind] = {
    None: Kind(StepMessage, _step, _step_dead),
    "embed": Kind(EmbedMessage, _embed, _embed_dead),
    "group_turn": Kind(GroupTurnMessage, _group_turn, _group_turn_dead),
    "agent_message": Kind(AgentMessage, _agent_message, _agent_message_dead),
    "file_job": Kind(FileJob, _file_job, _file_job_dead),
    "telegram_reply": Kind(TelegramReply, _telegram_reply, _telegram_reply_dead),
}


def _kind(raw: object) -> Kind:
    kind = raw.get("kind") if isinstance(raw, dict) else None
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
