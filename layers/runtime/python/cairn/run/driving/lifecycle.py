"""A run's start and its end from outside a step (cancel, dead letter): the run record, its
first step command and the agent's lease."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import NamedTuple

import psycopg

from cairn import tracing
from cairn.domain.ids import stable_id
from cairn.domain.limits import budget_spent
from cairn.domain.messages import Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, OutboxCommand, Run, RunOptions, step_command
from cairn.errors import (
    ConflictError,
    InvalidArgumentError,
    PendingApprovalError,
    not_found,
)
from cairn.store import agents, messages, runs
from cairn.store.claim import Claim
from cairn.store.db import Connection, Database

DEFAULT_OPTIONS = RunOptions()
# How long a run holds its agent without renewing (renewed by every step).
LEASE_SECONDS = 900.0


class StartedRun(NamedTuple):
    run: Run
    command: OutboxCommand  # the first step, for the caller to publish or run
    # An answer to an approval: the token of the workflow waiting for it, to send back.
    approval_token: str | None = None
    # `run_here`: the first step's claim, taken in the same round trip (hand it to `step`).
    first_claim: Claim | None = None
    # The inputs joined this run, already waiting (a coalescing agent): its first step is
    # another caller's, or on the queue; `command` is that step's.
    joined: bool = False


def start_run(
    db: Database,
    org_id: str,
    agent_id: str,
    inputs: list[Message],
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    run_here: bool = False,
    conn: Connection | None = None,
    org_cap: int = 0,
) -> StartedRun:
    """Record the run and its first step command together; the caller publishes it.

    With `run_here` the caller runs the first step itself: the command is stored as
    published, and goes back to the outbox only if that step cannot run (busy, crash).
    With `conn`, inside the caller's transaction (a batch starts all its runs or none).
    `org_cap`: the organization's share of the workers (settings.org_max_runs).
    """
    if not inputs and not options.compact_only:
        raise InvalidArgumentError("messages: at least one message is required")
    if options.max_steps < 1:
        raise InvalidArgumentError("max_steps: must be at least 1")
    answering = any(m.role == "approval" for m in inputs)
    run = Run(
        **({"id": options.run_id} if options.run_id else {}),
        organization_id=org_id,
        agent_id=agent_id,
        background=bool(options.background),
        metadata=dict(options.metadata),
        task_token=options.task_token,
    )
    stamped = [
        m.model_copy(update={"run_id": run.id, "agent_id": agent_id, "organization_id": org_id})
        for m in inputs
    ]
    run.request_config = {
        **Run.inputs_config(stamped),
        "max_steps": options.max_steps,
        # A summarise request: one compaction step, then the run ends.
        **({"compact_only": True} if options.compact_only else {}),
    }
    first = step_command(run, 0)
    # The run's span; its context is kept with the run, so each of its steps, wherever and
    # whenever it runs, is a child of it (one trace a run: cairn/tracing.py).
    with (
        tracing.span(
            "run",
            attributes={
                "cairn.run_id": run.id,
                "cairn.agent_id": agent_id,
                "cairn.organization_id": org_id,
            },
        ),
        nullcontext(conn) if conn is not None else db.connection() as on,
    ):
        if parent := tracing.traceparent():
            run.request_config["traceparent"] = parent
        if options.run_id and (again := _started_before(on, org_id, agent_id, options.run_id)):
            return again
        try:
            row, first_claim = runs.start_run(
                on,
                run,
                first,
                answering=answering,
                claim_lease_seconds=LEASE_SECONDS if run_here else None,
                claim_cap=org_cap,
                coalesce=options.coalesce and not answering and not options.compact_only,
            )
        except psycopg.errors.UniqueViolation:  # the same send at the same moment: one run
            again = _started_before(on, org_id, agent_id, options.run_id) if conn is None else None
            if again is None:
                raise
            return again
    if not row["found"]:
        raise not_found(f"Agent with ID {agent_id} not found")
    if row["spent"] is not None:
        raise budget_spent(org_id, row["spent"])
    if row["joined"] is not None:
        waiting = Run.model_validate(row["joined"])
        return StartedRun(waiting, step_command(waiting, 0), joined=True)
    if row["coalesce_until"] is not None:
        run.request_config["coalesce_until"] = row["coalesce_until"]
    if row["command"] is None:
        if row["pending_id"] is not None and not answering:
            raise PendingApprovalError(row["pending_id"])
        if row["pending_id"] is not None:
            raise ConflictError(f"Approval request {row['pending_id']} was already answered")
        # Letta's words and status (a ValueError, 400, in its agent loop): clients match on
        # "No tool call is currently awaiting approval" to recover from a lost approval.
        raise InvalidArgumentError(
            "Cannot process approval response: No tool call is currently awaiting approval. "
            "Please send a regular message to interact with the agent."
        )
    return StartedRun(
        run, OutboxCommand.model_validate(row["command"]), row["approval_token"], first_claim
    )


def _started_before(
    conn: Connection, org_id: str, agent_id: str, run_id: str | None
) -> StartedRun | None:
    """The run a send with this id started already (its inputs' `otid`, sent again after an
    answer that never came): the caller reads that run instead of starting a second."""
    found = runs.get_run(conn, org_id, run_id) if run_id else None
    if found is None or found.agent_id != agent_id:
        return None
    return StartedRun(found, step_command(found, 0), joined=True)


def send_run_id(org_id: str, agent_id: str, inputs: list[Message]) -> str | None:
    """A send's run id from its inputs' `otid`s (a client's ids for its messages; Letta
    derives its background streams' request token from all of them alike): the same send
    made again, after a 503 or a lost answer, is answered by its first run."""
    otids = [m.otid for m in inputs if m.otid]
    return stable_id("run", org_id, agent_id, *otids) if otids else None


def fail_run(
    db: Database,
    now: datetime,
    org_id: str,
    run_id: str,
    reason: str,
    detail: str,
    *,
    kind: str | None = None,
) -> Run | None:
    """End a run that cannot go on (dead-lettered step, cancel); frees its agent."""
    with db.transaction() as conn:
        # The agent's row first, as a checkpoint takes them (its messages' counts, then the
        # run): taking the run's first deadlocked with a step checkpointing meanwhile, each
        # waiting for the other (the run's, and the input message both write), and one was
        # refused (a cancel answered 503). The run is then read as that step left it.
        agents.lock_agent_of_run(conn, org_id, run_id)
        run = runs.get_run(conn, org_id, run_id)
        if run is None or run.status in TERMINAL_RUN_STATUSES:
            return run
        status = "cancelled" if reason == "cancelled" else "failed"
        ended = run.model_copy(
            update={
                "status": status,
                "stop_reason": reason,
                "completed_at": now,
                "error": None
                if status == "cancelled"
                else {"message": detail, "type": kind or reason},
            }
        )
        runs.update_run(conn, ended)
        # The run's inputs stay readable with it (recall, the runs API) when no step got to
        # store them; already stored ones are skipped by id. Never in the context window.
        # An approval answer is left out: the request it answered is still pending.
        kept = [m for m in run.input_messages() if m.role != "approval"]
        if kept:
            messages.insert(conn, kept)
        agents.release_lease(conn, org_id, run.agent_id, run_id)
        return ended
