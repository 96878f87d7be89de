"""Scheduled messages on EventBridge Scheduler: one schedule of its own per Cairn schedule,
invoking the sweeper function with the occurrence's time, so each fires on time (the
sweeper's minutely round stays the fallback). Cron expressions are the five-field kind
Cairn takes, written as EventBridge's six fields (`?` for the unused day, weekday numbers
as names, a year of `*`)."""

from __future__ import annotations

import json
import re
from contextlib import suppress
from datetime import UTC
from typing import Any

from cairn.domain.schedules import Schedule

_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]


def eventbridge_expression(schedule: Schedule) -> str | None:
    """`at(...)` or `cron(...)` for EventBridge Scheduler; None if it cannot say it (the
    sweeper fires that one)."""
    if schedule.kind == "once" and schedule.run_at is not None:
        return f"at({schedule.run_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')})"
    fields = (schedule.cron or "").split()
    if len(fields) != 5 or any("/" in f for f in fields[2:]):
        return None
    minute, hour, day, month, weekday = fields
    if weekday != "*":
        weekday = re.sub(r"\d", lambda m: _DAYS[int(m.group())], weekday)
        day = "?" if day == "*" else day
        if day != "?":
            return None  # both a day and a weekday: EventBridge takes one of them
    else:
        weekday = "?"
    return f"cron({minute} {hour} {day} {month} {weekday} *)"


class EventBridgeScheduler:
    def __init__(self, group: str, target_arn: str, role_arn: str, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("scheduler")
        self.group, self.target_arn, self.role_arn, self._client = (
            group,
            target_arn,
            role_arn,
            client,
        )

    def put(self, schedule: Schedule) -> bool:
        """Create its EventBridge schedule; False if EventBridge cannot express it."""
        expression = eventbridge_expression(schedule)
        if expression is None:
            return False
        payload = {
            "action": "fire_schedule",
            "organization_id": schedule.organization_id,
            "schedule_id": schedule.id,
            "occurrence": "<aws.scheduler.scheduled-time>",
        }
        self._client.create_schedule(
            Name=schedule.id,
            GroupName=self.group,
            ScheduleExpression=expression,
            ScheduleExpressionTimezone="UTC" if schedule.kind == "once" else schedule.timezone,
            FlexibleTimeWindow={"Mode": "OFF"},
            ActionAfterCompletion="DELETE" if schedule.kind == "once" else "NONE",
            Target={
                "Arn": self.target_arn,
                "RoleArn": self.role_arn,
                "Input": json.dumps(payload),
                "RetryPolicy": {"MaximumRetryAttempts": 10},
            },
        )
        return True

    def remove(self, schedule_id: str) -> None:
        # Gone already: fired (a one-time one deletes itself) or never made.
        with suppress(self._client.exceptions.ResourceNotFoundException):
            self._client.delete_schedule(Name=schedule_id, GroupName=self.group)
