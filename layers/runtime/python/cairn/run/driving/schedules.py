"""Scheduled messages fired: each due occurrence starts an ordinary run of its agent (as a
send would) under a run id derived from the schedule and the occurrence, so a delivery
made twice (EventBridge Scheduler's retry, the sweeper beside it) starts it once; then the
schedule moves on to its next occurrence (a one-time one is deleted).

Two ways in, both here: the sweeper's round fires whatever is due (the local stack's only
way, and AWS's fallback), and on AWS EventBridge Scheduler fires each occurrence on time
(`fire_one`, from the sweeper function).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from cairn.domain.base import utc_now
from cairn.domain.messages import Message, TextContent
from cairn.domain.runs import OutboxCommand, RunOptions
from cairn.domain.schedules import Schedule, next_after, occurrence_run_id
from cairn.errors import CairnError
from cairn.run.driving import lifecycle
from cairn.run.driving.dispatch import publish_and_mark
from cairn.run.runtime import Runtime
from cairn.store import runs, schedules
from cairn.store.db import Connection

logger = logging.getLogger(__name__)


def fire_due(rt: Runtime, now: datetime | None = None, limit: int = 100) -> int:
    """Fire the occurrences due by `now` (at most `limit`, and at most
    CAIRN_ORG_SCHEDULES_PER_ROUND of one organization's); how many runs started."""
    now = now or utc_now()
    commands: list[OutboxCommand] = []
    per_org = rt.settings.org_schedules_per_round
    with rt.db.transaction() as conn:
        for schedule in schedules.due(conn, now, limit, per_org):
            assert schedule.next_run_at is not None
            commands += _fire(rt, conn, schedule, schedule.next_run_at)
    for command in commands:
        publish_and_mark(rt.db, rt.queue, command)
    return len(commands)


def fire_one(rt: Runtime, org_id: str, schedule_id: str, occurrence: datetime) -> bool:
    """Fire one occurrence (EventBridge Scheduler's delivery); False if it had fired."""
    with rt.db.transaction() as conn:
        schedule = schedules.lock(conn, org_id, schedule_id)
        commands = _fire(rt, conn, schedule, occurrence) if schedule else []
    for command in commands:
        publish_and_mark(rt.db, rt.queue, command)
    return bool(commands)


def _fire(
    rt: Runtime, conn: Connection, schedule: Schedule, occurrence: datetime
) -> list[OutboxCommand]:
    """Start the occurrence's run (once) and move the schedule on past it, in `conn`."""
    following = next_after(schedule, occurrence)
    if schedule.next_run_at is not None and schedule.next_run_at <= occurrence:
        if following is None:  # a one-time schedule that fired is gone, as Letta's one-off
            # reminders and EventBridge's at() schedule; its run keeps the schedule's id
            schedules.delete(conn, schedule.organization_id, schedule.id)
        else:
            schedules.move_on(conn, schedule.id, occurrence, following)
    run_id = occurrence_run_id(schedule.id, occurrence)
    if runs.get_run(conn, schedule.organization_id, run_id) is not None:
        return []  # delivered before
    inputs = [_message(schedule, m) for m in schedule.messages]
    metadata = {
        "run_type": "scheduled_message",
        "schedule_id": schedule.id,
        "occurrence": occurrence.isoformat(),
    }
    options = RunOptions(background=True, run_id=run_id, metadata=metadata)
    try:
        started = lifecycle.start_run(
            rt.db,
            schedule.organization_id,
            schedule.agent_id,
            inputs,
            options,
            conn=conn,
            org_cap=rt.settings.org_max_runs,
        )
    except CairnError as err:  # waiting for an approval, say: this occurrence is skipped
        logger.warning("schedule %s at %s not delivered: %s", schedule.id, occurrence, err)
        return []
    return [started.command]


def _message(schedule: Schedule, sent: dict[str, Any]) -> Message:
    content = sent.get("content")
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return Message(
        organization_id=schedule.organization_id,
        agent_id=schedule.agent_id,
        role=sent.get("role") or "user",
        content=[TextContent(text=str(content))],
    )
