"""Scheduled messages to an agent: made, listed, read, cancelled. Firing is the
run's (run/driving/schedules.py)."""

from __future__ import annotations

import logging

from cairn.domain.base import utc_now
from cairn.domain.schedules import Schedule, check_room, make_schedule
from cairn.errors import found
from cairn.run.runtime import Runtime
from cairn.services import agents as agent_service
from cairn.services.requests import ScheduleCreate
from cairn.store import schedules

logger = logging.getLogger(__name__)


def create(rt: Runtime, org: str, agent_id: str, req: ScheduleCreate) -> Schedule:
    made = make_schedule(
        org,
        agent_id,
        req.text,
        run_at=req.run_at,
        cron=req.cron,
        timezone=req.timezone,
        now=utc_now(),
        max_chars=rt.settings.schedule_max_chars,
    )
    with rt.db.transaction() as conn:
        active = schedules.active_for_agent(conn, org, agent_id)
        check_room(active, rt.settings.agent_max_schedules)
        stored = found(schedules.create(conn, made), f"Agent with ID {agent_id} not found")
    register(rt, stored)
    return stored


def register(rt: Runtime, schedule: Schedule) -> None:
    """On time with EventBridge Scheduler where there is one (else the sweeper's round)."""
    if rt.scheduler is None:
        return
    try:
        rt.scheduler.put(schedule)
    except Exception:  # the sweeper's round fires it all the same
        logger.exception("EventBridge schedule for %s not made", schedule.id)


def list_of(
    rt: Runtime, org: str, agent_id: str, *, after: str | None, limit: int
) -> list[Schedule]:
    with rt.db.connection() as conn:
        agent_service.fetch(conn, org, agent_id)
        return schedules.of_agent(conn, org, agent_id, after=after, limit=limit)


def retrieve(rt: Runtime, org: str, agent_id: str, schedule_id: str) -> Schedule:
    with rt.db.connection() as conn:
        schedule = schedules.get(conn, org, schedule_id)
    theirs = schedule is not None and schedule.agent_id == agent_id
    return found(schedule if theirs else None, f"Schedule with id {schedule_id} not found")


def delete(rt: Runtime, org: str, agent_id: str, schedule_id: str) -> None:
    retrieve(rt, org, agent_id, schedule_id)
    with rt.db.transaction() as conn:
        schedules.delete(conn, org, schedule_id)
    if rt.scheduler is not None:
        rt.scheduler.remove(schedule_id)
