"""The work of the workflows' Task states (functions/approval and functions/sleeptime).

Each action is safe to repeat: Step Functions retries a Task whose Lambda failed, and a
token-waiting Task may see its work already done by someone else (an answer that came
before the wait registered, a run that finished before its token was sent back).
"""

from __future__ import annotations

import logging
from typing import Any

from cairn.domain.ids import stable_id
from cairn.domain.messages import ApprovalDecision, Message
from cairn.domain.runs import TERMINAL_RUN_STATUSES, RunOptions, task_result
from cairn.errors import ConflictError, LimitExceededError
from cairn.run import sleeptime
from cairn.run.driving import lifecycle
from cairn.run.driving.dispatch import publish_and_mark
from cairn.run.runtime import Runtime, send_result
from cairn.store import agents, messages, outbox, runs

logger = logging.getLogger(__name__)

CANCELLED = "Cancelled"


def approval_task(rt: Runtime, event: dict[str, Any]) -> dict[str, Any]:
    org, action = event["organization_id"], event["action"]
    if action == "wait":
        return register_wait(rt, org, event["run_id"], event["task_token"])
    if action == "timeout":
        return deny_on_timeout(rt, org, event["run_id"], int(event.get("timeout_seconds", 0)))
    if action == "continue":
        return queue_continuation(rt, org, event["answer"]["run_id"])
    raise ValueError(f"unknown approval action {action!r}")


def register_wait(rt: Runtime, org: str, run_id: str, token: str) -> dict[str, Any]:
    """Keep the token on the run, where the approval API finds it; nothing runs meanwhile."""
    with rt.db.connection() as conn:
        if runs.register_approval_wait(conn, org, run_id, token):
            return {"waiting": True}
        run = runs.get_run(conn, org, run_id)
    workflows = rt.workflows
    if run is not None and run.approval_answered_by:  # the answer beat the wait here
        workflows.succeed(token, {"run_id": run.approval_answered_by})
    else:
        workflows.fail(token, CANCELLED, f"run {run_id} was cancelled or deleted")
    return {"waiting": False}


def deny_on_timeout(rt: Runtime, org: str, run_id: str, seconds: int) -> dict[str, Any]:
    """Nobody answered in time: deny every pending call, and the agent goes on."""
    with rt.db.connection() as conn:
        run = runs.get_run(conn, org, run_id)
    if run is None:
        return {"denied": False}
    reason = f"No answer to the approval request within {seconds} seconds"
    closed = deny_pending(rt, org, run.agent_id, reason, of_run=run_id, kind="approval_timeout")
    return {"denied": True, "run_id": closed[0]} if closed else {"denied": False}


def deny_pending(
    rt: Runtime,
    org: str,
    agent_id: str,
    reason: str,
    *,
    of_run: str | None = None,
    kind: str = "approval_timeout",
) -> tuple[str, str] | None:
    """Deny every call of the agent's pending approval request (of run `of_run`, if given)
    in a run of its own; returns (that run's id, the id of the run whose request it
    closed), or None when nothing was pending.

    `kind` approval_cancel (a cancelled run's request) ends that run after the denials are
    stored, without asking the model: the agent takes new messages again, as after Letta's
    cancel; approval_timeout lets the model answer the denial, as a person's would."""
    with rt.db.connection() as conn:
        agent = agents.get(conn, org, agent_id)
        last = messages.get_many(conn, org, agent.message_ids[-1:]) if agent else []
    pending = last[0] if last and last[0].role == "approval" and last[0].tool_calls else None
    if agent is None or pending is None or (of_run is not None and pending.run_id != of_run):
        return None
    answer = Message(
        organization_id=org,
        agent_id=agent.id,
        role="approval",
        approvals=[
            ApprovalDecision(tool_call_id=c.id, approve=False, reason=reason)
            for c in pending.tool_calls or ()
        ],
        approve=False,
        denial_reason=reason,
    )
    try:
        options = RunOptions(background=True, metadata={"run_type": kind})
        started = lifecycle.start_run(
            rt.db, org, agent.id, [answer], options, org_cap=rt.settings.org_max_runs
        )
    except ConflictError:  # answered (or cancelled) at the last moment
        return None
    publish_and_mark(rt.db, rt.queue, started.command)
    return started.run.id, str(pending.run_id)


def queue_continuation(rt: Runtime, org: str, run_id: str) -> dict[str, Any]:
    """The answer's run goes on: publish its first step unless its caller already did."""
    with rt.db.connection() as conn:
        command = outbox.by_dedup_key(conn, org, f"{run_id}:0")
    if command is None or command.sent_at is not None:
        return {"queued": False}
    return {"queued": publish_and_mark(rt.db, rt.queue, command)}


def cancel_waits(rt: Runtime, org: str, agent_id: str) -> list[str]:
    """End the approval waits of an agent's runs; returns the cancelled run ids."""
    with rt.db.connection() as conn:
        ended = runs.cancel_approval_waits(conn, org, agent_id)
    for run_id, token in ended:
        rt.workflows.fail(token, CANCELLED, f"run {run_id} was cancelled")
    return [run_id for run_id, _ in ended]


def sleeptime_task(rt: Runtime, event: dict[str, Any]) -> dict[str, Any]:
    org, action = event["organization_id"], event["action"]
    if action == "plan":
        items = sleeptime.plan(
            rt.db, org, event["group_id"], event["upto_message_id"], event.get("after_message_id")
        )
        return {"items": items}
    if action == "run":
        return start_background(rt, event["item"], event.get("task_token"))
    if action == "finish":
        sleeptime.finish(rt.db, org, event["group_id"], event["upto_message_id"])
        return {"last_processed_message_id": event["upto_message_id"]}
    raise ValueError(f"unknown sleeptime action {action!r}")


def start_background(rt: Runtime, item: dict[str, str], token: str | None) -> dict[str, Any]:
    """Start one sleeptime agent's run; its last step sends the token back.

    The run's id comes from the item, so a retried Task (or a fan-out re-sent after a crash)
    finds the run it started instead of starting another one.
    """
    org = item["organization_id"]
    run_id = stable_id("run", item["group_id"], item["agent_id"], item["upto_message_id"])
    with rt.db.connection() as conn:
        existing = runs.get_run(conn, org, run_id)
    if existing is not None:
        if token and existing.status in TERMINAL_RUN_STATUSES:
            send_result(rt.workflows, task_result(existing, token))
        elif token:
            with rt.db.connection() as conn:
                runs.set_task_token(conn, org, run_id, token)
        return {"run_id": run_id}
    message = sleeptime.transcript_message(rt.db, item)
    if message is None:
        if token:
            rt.workflows.succeed(token, {"run_id": None, "status": "skipped"})
        return {"run_id": None}
    options = RunOptions(
        background=True,
        task_token=token,
        run_id=run_id,
        metadata={"run_type": "sleeptime", "group_id": item["group_id"]},
    )
    try:
        started = lifecycle.start_run(
            rt.db, org, item["agent_id"], [message], options, org_cap=rt.settings.org_max_runs
        )
    except LimitExceededError as err:  # a spent budget: no background run, and no failure
        if token:
            rt.workflows.succeed(token, {"run_id": None, "status": "skipped", "why": str(err)})
        return {"run_id": None}
    publish_and_mark(rt.db, rt.queue, started.command)
    return {"run_id": started.run.id}
