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
import time

from cairn.domain.runs import (
    TERMINAL_RUN_STATUSES,
    OutboxCommand,
    Run,
    file_job_command,
    task_result_command,
)
from cairn.run.driving.dispatch import publish_and_mark, wake, wake_organization
from cairn.run.runtime import Runtime
from cairn.store import files, outbox, runs

logger = logging.getLogger(__name__)

# A step that started this many times and never finished fails its run: the first start
# and two more. A step that crashes its worker every time (one that runs out of memory)
# ends here instead of looping.
MAX_REDRIVES = 2
# A step sent this many times more that never started at all: the queue keeps losing it.
# Only waiting in the queue (behind other agents' steps) is not a failure, so this is far
# more patient than MAX_REDRIVES, and a restart's re-send never counts.
MAX_LOST_SENDS = 6
# Recovery and the watchdog take stalled steps a page at a time, every page.
PAGE = 100


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
    # And the runs that waited for their organization's share (CAIRN_ORG_MAX_RUNS).
    wake_organization(rt.db, rt.queue, org_id, rt.settings.org_max_runs)
    if ended.task_token and ended.status != "completed":
        publish_and_mark(rt.db, rt.queue, task_result_command(ended))
    for hook in rt.engine.run_end:  # an edge's (a chat learns its run failed)
        if (command := hook(ended)) is not None:
            publish_and_mark(rt.db, rt.queue, command)
    return ended


def redrive_stalled(
    rt: Runtime,
    *,
    stall_seconds: float,
    max_redrives: int = MAX_REDRIVES,
    counted: bool = True,
) -> dict[str, int]:
    """Re-send the steps of runs stalled for `stall_seconds`, every one of them, a page at a
    time; fail those whose step started more than `max_redrives` times without finishing,
    or was sent MAX_LOST_SENDS times more and never started. `counted`: False for a
    restart's re-send (the queue died with the process: nobody's step failed)."""
    redriven = failed = 0
    after = 0
    while True:
        with rt.db.connection() as conn:
            page = outbox.stalled_steps(conn, stall_seconds=stall_seconds, limit=PAGE, after=after)
        for command in page:
            assert command.run_id is not None and command.id is not None
            after = max(after, command.id)
            index = command.payload.get("step_index")
            if command.claims > max_redrives or command.redrives >= MAX_LOST_SENDS:
                detail = (
                    f"The run made no progress: its step {index} started {command.claims} "
                    f"times and was sent {command.redrives + 1} times without reaching its "
                    "end (a worker that died each time, or a queue that lost it)"
                )
                logger.error("run %s failed: %s", command.run_id, detail)
                end_failed_run(
                    rt, command.organization_id, command.run_id, "error", detail, kind="stalled"
                )
                failed += 1
            elif _resend(rt, command, counted=counted):
                logger.warning("run %s: step %s re-sent after no progress", command.run_id, index)
                redriven += 1
        if len(page) < PAGE:
            return {"redriven": redriven, "failed": failed}


def recover_after_restart(rt: Runtime) -> dict[str, int]:
    """What the local stack's in-memory queue and workflows held when its process died:
    steps sent and never run, approval waits still unanswered, sleeptime fan-outs that
    never recorded their end. Each is sent again now, all of them, not counted as a
    re-drive: the queue was lost, not the step's fault."""
    done = redrive_stalled(rt, stall_seconds=0, counted=False)
    with rt.db.connection() as conn:
        lost = outbox.lost_workflows(conn)
    done["workflows"] = sum(_resend(rt, command, counted=False) for command in lost)
    done["files"] = resume_files(rt, older_than_seconds=0)  # their jobs were in the queue
    return done


def _resend(rt: Runtime, command: OutboxCommand, *, counted: bool = True) -> bool:
    with rt.db.connection() as conn:
        marked = outbox.mark_redriven(conn, command, counted=counted)
    if marked is None:  # another sweeper re-sent it a moment ago
        return False
    # A failed publish is recorded on the row; the next sweep finds the step stalled again.
    return publish_and_mark(rt.db, rt.queue, marked)


# A file job touches its row with every batch; one untouched this long has stopped.
FILE_STALL_SECONDS = 300.0


def resume_files(rt: Runtime, *, older_than_seconds: float = FILE_STALL_SECONDS) -> int:
    """Publish again the jobs of files left unfinished (every organization's)."""
    with rt.db.connection() as conn:
        stalled = files.unfinished(conn, older_than_seconds=older_than_seconds, limit=100)
    for org_id, file_id in stalled:
        with rt.db.connection() as conn:
            files.touch(conn, file_id)  # not again next round while this job runs
        rt.queue.publish(
            file_job_command(
                org_id, file_id, attempt=int(time.time()), lanes=rt.settings.org_files_at_once
            )
        )
    return len(stalled)
