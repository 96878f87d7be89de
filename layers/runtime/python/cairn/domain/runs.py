"""Runs (one agent turn), steps (one LLM call each), the step journal and the outbox."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from cairn.domain.agents import StopReason
from cairn.domain.base import DomainModel, Value, utc_now
from cairn.domain.constants import DEFAULT_MAX_STEPS
from cairn.domain.ids import AgentId, OrgId, RunId, StepId, new_id, stable_id
from cairn.domain.messages import Message

RunStatus = Literal["created", "running", "completed", "failed", "cancelled"]
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
StepKind = Literal["llm", "compaction", "approval"]
StepStatus = Literal["success", "failed", "cancelled"]


@dataclass(frozen=True)
class RunOptions:
    """How a run starts, one value from the request to the run's row (Letta's request
    fields, and what the workflows give their runs)."""

    max_steps: int = DEFAULT_MAX_STEPS
    # None: in the background unless its caller runs its steps (a sync send, a stream).
    background: bool | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    task_token: str | None = None  # a workflow waits for this run's end
    compact_only: bool = False  # a summarise request: one compaction step
    run_id: str | None = None  # chosen by the caller (a fan-out, a group's chain)
    # A user's send: joins the agent's waiting run if the agent coalesces (START_RUN).
    coalesce: bool = False


def run_status_for(stop_reason: StopReason) -> RunStatus:
    """Letta's mapping from a stop reason to the run's final status."""
    if stop_reason in ("end_turn", "max_steps", "tool_rule", "requires_approval"):
        return "completed"
    if stop_reason == "cancelled":
        return "cancelled"
    return "failed"


class Usage(Value):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    step_count: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def plus_step(self, tokens: BaseModel | None) -> Usage:
        """This usage with one more step and its token counts (any model with those fields)."""
        counts = tokens.model_dump() if tokens is not None else {}
        added = {k: getattr(self, k) + int(counts.get(k, 0)) for k in type(self).model_fields}
        return Usage.model_validate(added | {"step_count": self.step_count + 1})

    def __add__(self, other: Usage) -> Usage:
        return Usage.model_validate(
            {k: getattr(self, k) + getattr(other, k) for k in type(self).model_fields}
        )


class Run(DomainModel):
    id: RunId = Field(default_factory=lambda: new_id("run"))
    organization_id: OrgId
    agent_id: AgentId
    status: RunStatus = "created"
    stop_reason: StopReason | None = None
    background: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)
    request_config: dict[str, Any] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    error: dict[str, Any] | None = None
    callback_url: str | None = None
    callback_sent_at: datetime | None = None
    callback_status_code: int | None = None
    callback_error: str | None = None
    # The Step Functions task token of an approval wait, so the approval API can answer it.
    approval_task_token: str | None = None
    # The run that answered this run's approval request (one answer per request).
    approval_answered_by: str | None = None
    # A workflow item waits for this background run: its last step sends the token back.
    task_token: str | None = None
    ttft_ns: int | None = None
    total_duration_ns: int | None = None
    created_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)
    completed_at: datetime | None = None

    # A run's input messages are kept whole in its request config (`"input"`), written when
    # it starts and read by its first step, by the runs API and by a group's next turn.
    @staticmethod
    def inputs_config(inputs: list[Message]) -> dict[str, Any]:
        return {"input": [m.model_dump(mode="json") for m in inputs]}

    def input_messages(self) -> list[Message]:
        return [Message.model_validate(m) for m in self.request_config.get("input") or ()]

    def input_ids(self) -> set[str]:
        """The ids of the messages the run was given (what it made is everything else)."""
        return {m["id"] for m in self.request_config.get("input") or ()}


class Step(DomainModel):
    id: StepId = Field(default_factory=lambda: new_id("step"))
    organization_id: OrgId
    run_id: RunId
    agent_id: AgentId
    step_index: int = Field(ge=0)
    kind: StepKind = "llm"
    status: StepStatus = "success"
    stop_reason: StopReason | None = None
    provider_name: str | None = None
    model: str | None = None
    model_endpoint: str | None = None
    context_window_limit: int | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0  # of the prompt's, read from the provider's cache
    cache_write_tokens: int = 0  # of the prompt's, written to it (Anthropic, Bedrock)
    reasoning_tokens: int = 0  # of the completion's
    tool_calls: int = 0  # asked for by the model's answer
    error: dict[str, Any] | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    created_at: datetime = Field(default_factory=utc_now)
    # Where this delivery's time went (a journaled response reused costs no model time).
    llm_request_ns: int | None = None
    tool_execution_ns: int | None = None
    # Set by people after the fact (PATCH /v1/steps/{id}/feedback, .../transaction/{tid}).
    feedback: Literal["positive", "negative"] | None = None
    tags: list[str] = Field(default_factory=list)
    tid: str | None = None


class JournalEntry(DomainModel):
    """Something a step must not redo on retry (an LLM response, a tool's result)."""

    organization_id: OrgId
    run_id: RunId
    step_index: int = Field(ge=0)
    key: str = Field(min_length=1)  # "llm", or "tool:<tool_call_id>"
    payload: dict[str, Any]
    created_at: datetime = Field(default_factory=utc_now)


# step/embed/group_turn/agent_message go to the step queue; approval_wait and sleeptime
# start workflows; task_result sends a workflow item's token back when its background run ends.
# file_job goes to the files queue and is never stored: a file row whose processing has not
# finished is its own record (the sweeper publishes it again).
# An edge's own kinds are named in its record (its queue kinds); the outbox table's CHECK
# constraint lists every kind, the core's and the edges'.
OutboxKind = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z_]{0,39}$")]


class OutboxCommand(DomainModel):
    """A continuation written in a checkpoint and published after commit."""

    id: int | None = None
    organization_id: OrgId
    # The FIFO group: an agent's id (a file job's: its file's id).
    agent_id: str = Field(min_length=1)
    run_id: RunId | None = None
    kind: OutboxKind
    payload: dict[str, Any] = Field(default_factory=dict)
    # Natural key (e.g. "run-…:3"): writing the same command twice is a no-op.
    dedup_key: str = Field(min_length=1)
    created_at: datetime = Field(default_factory=utc_now)
    sent_at: datetime | None = None
    attempts: int = 0
    last_error: str | None = None
    redrives: int = 0  # re-sent by the watchdog after no progress (run/driving/watchdog.py)
    claims: int = 0  # times the step started (its claim took the agent)


def embed_command(
    organization_id: str, agent_id: str, dedup_key: str, run_id: str | None = None
) -> OutboxCommand:
    """The queued job that embeds an agent's messages stored without an embedding."""
    return OutboxCommand(
        organization_id=organization_id,
        agent_id=agent_id,
        run_id=run_id,
        kind="embed",
        payload={"kind": "embed", "organization_id": organization_id, "agent_id": agent_id},
        dedup_key=dedup_key,
    )


def run_command(run: Run, kind: OutboxKind, key: str, payload: dict[str, Any]) -> OutboxCommand:
    """A command of this run, keyed "run:key" (written twice, it is one command)."""
    return OutboxCommand(
        organization_id=run.organization_id,
        agent_id=run.agent_id,
        run_id=run.id,
        kind=kind,
        payload=payload,
        dedup_key=f"{run.id}:{key}",
    )


def step_command(run: Run, step_index: int) -> OutboxCommand:
    """One step of a run, for the step queue; "run:index" keys it. A run that came in by a
    channel names it in its metadata (`channel`, e.g. a chat): its steps carry it for what the
    channel does around a step (`Extensions.around_step`); the worker reads none of it."""
    payload: dict[str, Any] = {
        "organization_id": run.organization_id,
        "run_id": run.id,
        "step_index": step_index,
        # a hint: the claim finds the run's agent itself, and a warm function that holds
        # the agent's window parsed sends only what is new in it (store/parsed_windows.py)
        "agent_id": run.agent_id,
    }
    if isinstance(channel := run.metadata.get("channel"), dict):
        payload["channel"] = channel
    return run_command(run, "step", str(step_index), payload)


def approval_wait_command(run: Run) -> OutboxCommand:
    """Start the approval workflow of a run that stopped at `requires_approval`."""
    payload = {"organization_id": run.organization_id, "agent_id": run.agent_id, "run_id": run.id}
    return run_command(run, "approval_wait", "approval", payload)


def group_turn_command(run: Run) -> OutboxCommand | None:
    """The next speaker's turn of a round-robin group message, started by the end of this
    one (None after the last turn). The chain (its first run's id), the turn and the number
    of turns ride in the run's metadata, fixed when the message was sent."""
    chain = run.metadata.get("group_chain")
    if not isinstance(chain, dict) or chain["turn"] + 1 >= chain["turns"]:
        return None
    payload = {
        "kind": "group_turn",
        "organization_id": run.organization_id,
        "group_id": run.metadata["group_id"],
        "chain": chain["chain"],
        "turn": chain["turn"] + 1,
        "turns": chain["turns"],
    }
    return run_command(run, "group_turn", "group_turn", payload)


def agent_message_command(
    run: Run, target_id: str, text: str, key: str, sender_name: str
) -> OutboxCommand:
    """Start `target_id`'s run on an agent's message to it (Letta's
    send_message_to_agent_async), once: the sender's checkpoint writes it, `key` (the call
    that sent it) keys it, and the run it starts has an id derived from that key."""
    payload = {
        "kind": "agent_message",
        "organization_id": run.organization_id,
        "sender_id": run.agent_id,
        "sender_name": sender_name,
        "sender_run_id": run.id,
        "agent_id": target_id,
        "run_id": stable_id("run", run.id, key),
        "text": text,
    }
    return run_command(run, "agent_message", f"agent_message:{key}", payload)


# How many of one organization's files are processed at once (CAIRN_ORG_FILES_AT_ONCE).
ORG_FILES_AT_ONCE = 2


def file_job_command(
    organization_id: str, file_id: str, attempt: int = 0, lanes: int = ORG_FILES_AT_ONCE
) -> OutboxCommand:
    """Process a file (parse, chunk, embed): on the files queue, in one of its
    organization's `lanes` message groups (by the file). A FIFO queue hands out one message
    of a group at a time and serves groups side by side, so one tenant's bulk upload takes
    at most `lanes` workers and never queues another tenant's files behind its own."""
    payload = {"kind": "file_job", "organization_id": organization_id, "file_id": file_id}
    group = f"files:{organization_id}:{zlib.crc32(file_id.encode()) % max(lanes, 1)}"
    return OutboxCommand(
        organization_id=organization_id,
        agent_id=group,
        kind="file_job",
        payload=payload,
        dedup_key=f"{file_id}:job",
        attempts=attempt,
    )


def task_result(run: Run, token: str) -> dict[str, Any]:
    """What a workflow item waiting on `token` is answered with: its run has ended."""
    return {
        "task_token": token,
        "run_id": run.id,
        "agent_id": run.agent_id,
        "status": run.status,
        "stop_reason": run.stop_reason,
        "error": run.error,
    }


def task_result_command(run: Run) -> OutboxCommand:
    """Send a workflow item's token back: its background run has ended."""
    assert run.task_token is not None
    return run_command(run, "task_result", "task_result", task_result(run, run.task_token))
