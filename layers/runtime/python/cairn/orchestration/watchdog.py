"""Every run reaches an end.

A step whose queue message was lost, or whose worker died between taking it and writing
its checkpoint, leaves its run `created` or `running` with nothing on its way. The sweeper's
watchdog finds such runs once they have made no progress for a while (`run_stall_seconds`),
sends their step again (a step is safe to repeat: its claim sees a checkpoint that exists),
and after `MAX_REDRIVES` sends without progress fails the run with the reason and frees
its agent. The local stack keeps its queue and workflows in memory, so after a restart it
re-sends everything they held at once (`recover_after_restart`).
"""

from __future__ import annotations

import logging

from cairn.domain.runs import TERMINAL_RUN_STATUSES, OutboxCommand, Run, task_result_command
from cairn.orchestration.dispatch import publish_and_mark, wake
from cairn.orchestration.parts import Runtime
from cairn.store import outbox, runs

logger = logging.getLogger(__name__)

# Sends of one step that made no progress before its run is failed: the first delivery
# and two more. A step that crashes its worker every time (one that runs out of memory)
# ends here instead of looping.
MAX_REDRIVES = 2


def end_failed_run(
    rt: Runtime, org_id: str, run_id: str, reason: str, detail: str, *, kind: str | None = None
) -> Run | None:
    """Fail a run from outside its steps, and do what its own last step would have done:
    free the agent for the runs waiting on it and answer the workflow item it belongs to."""
    with rt.db.connection() as conn:
        run = runs.get_run(conn, org_id, run_id)
    if run is None or run.status in TERMINAL_RUN_STATUSES:
        return run  # its own last step has freed the agent and answered the workflow
    ended = rt.engine.fail_run(org_id, run_id, reason, detail, kind=kind)
    if ended is None:
        return None
    wake(rt.db, rt.queue, org_id, ended.agent_id)
    if ended.task_token and ended.status != "completed":
        publish_and_mark(rt.db, rt.queue, task_result_command(ended))
    return ended


def redrive_stalled(
    rt: Runtime, *, stall_seconds: float, max_redrives: int = MAX_REDRIVES, limit: int = 100
) -> dict[str, int]:
    """Re-send the steps of runs stalled for `stall_seconds`; fail those past the budget."""
    with rt.db.connection() as conn:
        stalled = outbox.stalled_steps(conn, stall_seconds=stall_seconds, limit=limit)
    redriven = failed = 0
    for command in stalled:
        assert command.run_id is not None
        index = command.payload.get("step_index")
        if command.redrives >= max_redrives:
            detail = (
                f"The run made no progress: its step {index} was sent {command.redrives + 1} "
                f"times and never ran to its end (a lost queue message or a worker that died)"
            )
            logger.error("run %s failed: %s", command.run_id, detail)
            end_failed_run(rt, command.organization_id, command.run_id, "error", detail,
                           kind="stalled")  # fmt: skip
            failed += 1
        elif _resend(rt, command):
            logger.warning("run %s: step %s re-sent after no progress", command.run_id, index)
            redriven += 1
    return {"redriven": redriven, "failed": failed}


def recover_after_restart(rt: Runtime) -> dict[str, int]:
    """What the local stack's in-memory queue and workflows held when its process died:
    steps sent and never run, approval waits still unanswered, sleeptime fan-outs that
    never recorded their end. Each is sent again now (and counted as a re-drive)."""
    done = redrive_stalled(rt, stall_seconds=0)
    with rt.db.connection() as conn:
        lost = outbox.lost_workflows(conn)
    done["workflows"] = sum(_resend(rt, command) for command in lost)
    return done


def _resend(rt: Runtime, command: OutboxCommand) -> bool:
    with rt.db.connection() as conn:
        counted = outbox.mark_redriven(conn, command)
    if counted is None:  # another sweeper re-sent it a moment ago
        return False
    # A failed publish is recorded on the row; the next sweep finds the step stalled again.
    return publish_and_mark(rt.db, rt.queue, counted)
