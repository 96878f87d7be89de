"""Messages scheduled to an agent: once at a time, or on a cron expression in a timezone."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import Field

from cairn.domain.base import DomainModel, utc_now
from cairn.domain.ids import AgentId, OrgId, new_id, stable_id

ScheduleKind = Literal["once", "cron"]


class Schedule(DomainModel):
    id: str = Field(default_factory=lambda: new_id("schedule"))
    organization_id: OrgId
    agent_id: AgentId
    messages: list[dict[str, Any]] = Field(min_length=1)  # {role, content}, as sent
    kind: ScheduleKind
    run_at: datetime | None = None
    cron: str | None = None
    timezone: str = "UTC"
    next_run_at: datetime | None = None
    last_run_at: datetime | None = None
    created_at: datetime = Field(default_factory=utc_now)


def next_after(schedule: Schedule, moment: datetime) -> datetime | None:
    """The schedule's first occurrence after `moment` (None for a one-time schedule)."""
    if schedule.kind == "once" or schedule.cron is None:
        return None
    from croniter import croniter

    local = moment.astimezone(ZoneInfo(schedule.timezone))
    found: datetime = croniter(schedule.cron, local).get_next(datetime)
    return found.astimezone(moment.tzinfo or ZoneInfo("UTC"))


def occurrence_run_id(schedule_id: str, occurrence: datetime) -> str:
    """The run an occurrence starts: the same however often it is delivered."""
    return stable_id("run", schedule_id, occurrence.astimezone(ZoneInfo("UTC")).isoformat())


# A one-time message may be set this far in the past (a clock behind the server's): it
# fires at once; earlier is a mistake.
PAST_SLACK_SECONDS = 60


# The defaults of CAIRN_SCHEDULE_MAX_CHARS (a scheduled message is sent again on every
# firing, every minute at most) and CAIRN_AGENT_MAX_SCHEDULES (each still to fire is a turn
# of the operator's model to come).
MAX_SCHEDULED_CHARS = 10_000
MAX_AGENT_SCHEDULES = 50


def check_room(active: int, cap: int = MAX_AGENT_SCHEDULES) -> None:
    """InvalidArgumentError if an agent with `active` schedules may make no more."""
    from cairn.errors import InvalidArgumentError

    if active >= cap:
        raise InvalidArgumentError(
            f"schedule: the agent has {active} scheduled messages still to fire, the limit "
            f"of {cap} (CAIRN_AGENT_MAX_SCHEDULES); delete one first"
        )


def make_schedule(
    organization_id: str,
    agent_id: str,
    text: str,
    *,
    run_at: datetime | None,
    cron: str | None,
    timezone: str,
    now: datetime,
    schedule_id: str | None = None,
    max_chars: int = MAX_SCHEDULED_CHARS,
) -> Schedule:
    """A schedule of `text` to the agent, checked; InvalidArgumentError naming the field."""
    from croniter import croniter

    from cairn.errors import InvalidArgumentError

    if (run_at is None) == (cron is None):
        raise InvalidArgumentError("schedule: give one of `run_at` (a time) or `cron`")
    try:
        zone = ZoneInfo(timezone)
    except (KeyError, ValueError):
        raise InvalidArgumentError(f"timezone: `{timezone}` is not an IANA timezone") from None
    if not text.strip():
        raise InvalidArgumentError("message: the scheduled message is empty")
    if len(text) > max_chars:
        raise InvalidArgumentError(
            f"message: {len(text)} characters, over the limit of {max_chars} a scheduled "
            "message (CAIRN_SCHEDULE_MAX_CHARS: it is sent again on every firing)"
        )
    fields: dict[str, Any] = {"id": schedule_id} if schedule_id else {}
    if run_at is not None:
        when = run_at if run_at.tzinfo else run_at.replace(tzinfo=zone)
        if (now - when).total_seconds() > PAST_SLACK_SECONDS:
            raise InvalidArgumentError(f"run_at: {when.isoformat()} is in the past")
        return Schedule(
            organization_id=organization_id,
            agent_id=agent_id,
            kind="once",
            messages=[{"role": "user", "content": text}],
            run_at=when,
            timezone=timezone,
            next_run_at=max(when, now),
            **fields,
        )
    assert cron is not None
    if len(cron.split()) != 5 or not croniter.is_valid(cron):
        raise InvalidArgumentError(
            f"cron: `{cron}` is not a five-field cron expression (minute hour day month weekday)"
        )
    made = Schedule(
        organization_id=organization_id,
        agent_id=agent_id,
        kind="cron",
        messages=[{"role": "user", "content": text}],
        cron=cron,
        timezone=timezone,
        **fields,
    )
    return made.model_copy(update={"next_run_at": next_after(made, now)})
